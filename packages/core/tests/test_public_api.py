"""The public API of cladelog.core is pinned: a change shows up as a snapshot diff."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from cladelog.core.testing.api import check_snapshot, describe, snapshot

MODULES = [
    "cladelog.core",
    "cladelog.core.hookspecs",
    "cladelog.core.elo",
    "cladelog.core.cli",
    "cladelog.core.strictjson",
    "cladelog.core.fields",
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


def test_the_export_list_is_written_once(tmp_path: Path) -> None:
    """``__all__`` and the lazy loader come from the import lines type checkers read."""
    import cladelog.core
    from cladelog.core.lazy import exports_from_source

    source = Path(cladelog.core.__file__).read_text(encoding="utf-8")
    lines = [line.split("#")[0].strip() for line in source.splitlines()
             if line.strip().startswith("from .") and " as " in line]
    names = [line.rsplit(" as ", 1)[1] for line in lines]
    assert sorted(cladelog.core.__all__) == sorted([*names, "__version__"])
    assert source.count('"canonical_bytes"') == 0  # no second list of names as strings
    for line in lines:
        module, name = line.removeprefix("from .").split(" import ")[0], line.rsplit(" ", 1)[1]
        value = getattr(cladelog.core, name)
        assert value is getattr(importlib.import_module(f"cladelog.core.{module}"), name)

    init = tmp_path / "__init__.py"
    init.write_text("from .a import x as x  # noqa\nfrom .b import y\nfrom .c import z as w\n"
                    "if T:\n    from .d.e import Q as Q\n", encoding="utf-8")
    assert exports_from_source(str(init)) == {"x": "a", "Q": "d.e"}
    init.write_text("from .b import y\n", encoding="utf-8")
    with pytest.raises(ImportError, match=r"no 'from \.module import name as name'"):
        exports_from_source(str(init))
