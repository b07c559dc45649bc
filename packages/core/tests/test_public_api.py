"""The public API of cladelog.core is pinned: a change shows up as a snapshot diff."""

from __future__ import annotations

from pathlib import Path

import pytest
from cladelog.core.testing.api import check_snapshot, describe, snapshot

MODULES = [
    "cladelog.core",
    "cladelog.core.hookspecs",
    "cladelog.core.elo",
    "cladelog.core.cli",
    "cladelog.core.strictjson",
    "cladelog.core.testing",
    "cladelog.core.transparency",
]


def test_public_api_matches_the_snapshot() -> None:
    check_snapshot(MODULES, Path(__file__).parent / "api" / "core.txt")


def test_hook_specs_are_in_the_snapshot() -> None:
    text = snapshot(["cladelog.core.hookspecs"])
    for hook in ("cladelog_event_types", "cladelog_projections", "cladelog_cli_commands",
                 "cladelog_gate_vote", "cladelog_configure", "cladelog_add_hookspecs"):
        assert f"def {hook}(" in text


def test_describe_sees_attrs_fields_and_defaults() -> None:
    import attrs

    @attrs.frozen
    class Sample:
        a: int
        b: str = "x"

    lines = describe("Sample", Sample)
    assert "    field a: int" in lines
    assert "    field b: str = 'x'" in lines


def test_a_module_without_all_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    monkeypatch.setitem(sys.modules, "no_all_here", types.ModuleType("no_all_here"))
    with pytest.raises(AssertionError, match="has no __all__"):
        snapshot(["no_all_here"])
