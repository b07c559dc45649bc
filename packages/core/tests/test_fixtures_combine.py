"""The plugin-author fixtures combine: an uninstalled module, its command through
``cladelog_env.cli()``, and a projection tested on the test-only event types."""

from __future__ import annotations

import types
from typing import Any

import click
import pytest
from cladelog.core import PluginInfo, Projection, hookimpl, pass_deployment
from cladelog.core.testing import sample


def _apply(state: dict[str, Any], event: Any) -> dict[str, Any]:
    state["total"] += event.data["n"]
    state["types"][event.type] = state["types"].get(event.type, 0) + 1
    return state


def _counter_module() -> types.ModuleType:
    """An uninstalled plugin: a projection over every event type, and a command."""
    module = types.ModuleType("counter_plugin")
    module.PLUGIN = PluginInfo(name="counter", version="0.0.1")  # type: ignore[attr-defined]

    @click.command("counter")
    @pass_deployment
    def show(dep: Any) -> None:
        state = dep.state("counter.totals")
        click.echo(f"total {state['total']} over {sorted(state['types'])}")

    @hookimpl
    def cladelog_projections() -> list[Projection]:
        return [
            Projection(
                "counter.totals",
                1,
                frozenset({sample.SAMPLE_EVENT}),
                {"total": 0, "types": {}},
                _apply,
            )
        ]

    @hookimpl
    def cladelog_cli_commands() -> list[click.Command]:
        return [show]

    module.cladelog_projections = cladelog_projections  # type: ignore[attr-defined]
    module.cladelog_cli_commands = cladelog_cli_commands  # type: ignore[attr-defined]
    return module


@pytest.fixture
def cladelog_plugin_modules() -> list[Any]:
    return [sample, _counter_module()]


def test_a_module_plugin_command_runs_through_cli(cladelog_env: Any) -> None:
    cladelog_env.append(sample.SAMPLE_EVENT, {"key": "a", "n": 2}, stream="s")
    cladelog_env.append(sample.SAMPLE_EVENT, {"n": 3}, stream="s")
    cladelog_env.append(sample.OTHER_EVENT, {"key": "b", "n": 100}, stream="s")
    result = cladelog_env.cli("counter")
    assert result.exit_code == 0, result.output
    assert result.output == "total 5 over ['testing.sample']\n"  # testing.other filtered out
    replay = cladelog_env.cli("replay")
    assert replay.exit_code == 0, replay.output
    assert "counter.totals" in replay.output


def test_the_test_only_types_are_checked_like_any_payload(cladelog_env: Any) -> None:
    event = cladelog_env.append(sample.SAMPLE_EVENT, {"key": "k", "data": {"x": [1, 2]}})
    assert event.data == {"key": "k", "n": 0, "data": {"x": [1, 2]}}
    with pytest.raises(ValueError, match=r"data\.n"):
        cladelog_env.append(sample.SAMPLE_EVENT, {"n": "many"})
    appended = cladelog_env.cli(
        "append", "-", input='{"stream": "s", "type": "testing.other", "data": {"n": 1}}'
    )
    assert appended.exit_code == 0, appended.output
    assert cladelog_env.state("counter.totals") == {"total": 0, "types": {"testing.sample": 1}}
