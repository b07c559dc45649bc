"""Cold start with plugins installed (issue 22): these need other packages than core's
own, so they run in the integration environment. The driver and fixture are core's
(packages/core/tests/test_cold_start.py)."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
from pathlib import Path

import pytest
from cladelog.core.locate import entry_point_values, entry_points

_SPEC = importlib.util.spec_from_file_location(
    "core_cold_start",
    Path(__file__).resolve().parents[1] / "packages/core/tests/test_cold_start.py")
assert _SPEC is not None and _SPEC.loader is not None
_core = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_core)
imported = _core.imported
empty_deployment = _core.empty_deployment


@pytest.mark.parametrize("group", ["cladelog.commands", "cladelog.plugins"])
def test_entry_points_read_directly_match_importlib_metadata(group: str) -> None:
    expected = {ep.name: (ep.value, ep.group, ep.dist.name if ep.dist else None)
                for ep in md.entry_points(group=group)}
    assert expected  # this environment installs the packages that declare them
    assert entry_point_values(group) == {n: v for n, (v, _, _) in expected.items()}
    got = entry_points(group)
    assert {n: (ep.value, ep.group, ep.dist.name) for n, ep in got.items()} == expected
    for ep in md.entry_points(group=group):
        assert got[ep.name].load() is ep.load()


def test_a_deployment_with_plugins_starts_without_importlib_metadata(
        empty_deployment: Path) -> None:
    (empty_deployment / "cladelog.toml").write_text(
        'store = "cladelog.sqlite3"\nplugins = ["fork-score", "receipts", "lawv"]\n',
        encoding="utf-8")
    modules, output = imported(empty_deployment, "--help")
    assert "fork-score" in output.split("Commands:\n", 1)[1]  # the plugin's command group
    assert {"cladelog.fork_score.plugin", "cladelog.lawv.plugin"} <= modules
    assert "importlib.metadata" not in modules
    modules, output = imported(empty_deployment, "replay")
    assert "lawv" in output and "importlib.metadata" not in modules


def test_replay_with_the_graph_engine_does_not_start_its_authoring_loops(
        empty_deployment: Path) -> None:
    """The plugin's event types and projections come from authoring.eventlog; importing it
    must not bring in the loops (asyncio), the MDL gate or recall (lazy package names)."""
    (empty_deployment / "cladelog.toml").write_text(
        'store = "cladelog.sqlite3"\nplugins = ["graph-engine"]\n', encoding="utf-8")
    modules, output = imported(empty_deployment, "replay")
    assert "graph_engine.libraries" in output  # the authoring projection was replayed
    assert "cladelog.graph_engine.authoring.eventlog" in modules
    assert not {"asyncio", "cladelog.graph_engine.authoring.loop",
                "cladelog.graph_engine.authoring.mdl"} & modules
