"""The reference's scenario fixtures, compared field by field (SPEC §2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.graph_engine import Engine, run_scenario

FIXTURES = Path(__file__).parent / "fixtures"


def _load(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    scenario = json.loads((FIXTURES / f"{name}.input.json").read_text())
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    return scenario, expected


@pytest.mark.parametrize("name", ["01_require_chain", "08_apply_cap_cycles"])
def test_fixture_matches_reference_exactly(name: str) -> None:
    scenario, expected = _load(name)
    out = run_scenario(scenario)
    # every field the reference wrote must match exactly, including {__push} array order
    for key, value in expected.items():
        assert out.get(key) == value, key
    assert set(out) == set(expected)


@pytest.mark.parametrize("name", ["01_require_chain", "08_apply_cap_cycles"])
def test_fixture_replays_without_providers(name: str) -> None:
    scenario, expected = _load(name)
    records: list[tuple[str, dict[str, Any]]] = []
    out = run_scenario(scenario, sink=lambda kind, data: records.append((kind, data)))
    assert out["final"] == expected["final"]
    calls = sum(expected["providerCalls"].values())
    assert calls > 0
    replayed = Engine.replay(records)  # no providers registered: none can be called
    assert replayed.provider_calls == {}
    live_digest = [d for k, d in records if k == "settled"][-1]["digest"]
    assert replayed.digest() == live_digest
    final = {oid: {k: v for k, v in f.items() if k != "_rev"}
             for oid, f in replayed.facts().items()}
    assert final == expected["final"]


def test_fixture_06_with_the_authoring_loop_kind() -> None:
    from cladelog.graph_engine.sessions import default_provider_kinds

    kinds = default_provider_kinds()
    assert "loop" in kinds  # the authoring package registers it
    scenario, expected = _load("06_decompose_loop")
    out = run_scenario(scenario, provider_kinds=kinds)
    for key, value in expected.items():
        assert out.get(key) == value, key
