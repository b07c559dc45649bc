"""`fork-score branch-set show` prints each branch's breakdown, a plugin's own term included.

The term comes from a plugin module that is not installed (``cladelog_plugin_modules``),
run through ``cladelog_env.cli()``. Expected contributions, worked out by hand: every 5S
rate 0.5 -> 0.75 gives alpha * delta_5S = 0.25; the term is -mu * loc / 1000 with mu = 0.5.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import PluginInfo, hookimpl
from fork_score_docs import make_doc
from fork_score_plugin_helpers import all_5s, write_json


def _loc_term_module() -> types.ModuleType:
    module = types.ModuleType("loc_term")
    module.PLUGIN = PluginInfo(
        name="loc-term",
        version="0.0.1",  # type: ignore[attr-defined]
        requires=("fork-score",),
    )

    @hookimpl
    def fork_score_terms() -> list[dict[str, Any]]:
        return [
            {
                "name": "loc_growth",
                "weight_name": "mu",
                "default_weight": 0.5,
                "sign": -1,
                "fn": lambda parent, child, inputs: child.get("loc", 0) / 1000,
            }
        ]

    module.fork_score_terms = fork_score_terms  # type: ignore[attr-defined]
    return module


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["fork-score"]


@pytest.fixture
def cladelog_plugin_modules() -> list[Any]:
    return [_loc_term_module()]


def test_show_prints_every_branch_breakdown_with_term_labels(
    cladelog_env: Any, tmp_path: Path
) -> None:
    parent = write_json(tmp_path, "p.json", make_doc(0.5))
    children = {"b1": make_doc(0.5, all_5s(0.75), loc=200), "b2": make_doc(0.5, loc=0)}
    for branch, doc in children.items():
        run = cladelog_env.cli(
            "fork-score",
            "score",
            "--parent",
            parent,
            "--child",
            write_json(tmp_path, f"{branch}.json", doc),
            "--branch-set",
            "S1",
            "--branch-id",
            branch,
            "--parent-root",
            "P0",
        )
        assert run.exit_code == 0, run.output

    shown = cladelog_env.cli("fork-score", "branch-set", "show", "S1")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "breakdown (signed contribution of each term):" in lines
    header = next(line for line in lines if line.startswith("TERM"))
    assert header.split() == ["TERM", "KEY", "#1", "b1", "#2", "b2"]
    rows = {
        line.split()[1]: line.split() for line in lines if len(line.split()) == 4 and "_x_" in line
    }
    assert rows["alpha_x_delta_5s"] == ["α·Δ5S", "alpha_x_delta_5s", "0.250000", "0.000000"]
    assert rows["minus_mu_x_loc_growth"] == [
        "−μ·loc_growth",
        "minus_mu_x_loc_growth",
        "-0.100000",
        "0.000000",
    ]
    assert rows["minus_eta_x_regression_penalty"][0] == "−η·RegressionPenalty"
    assert len(rows) == 12  # the eleven built-in terms and the plugin's

    as_json = json.loads(
        cladelog_env.cli("fork-score", "branch-set", "show", "S1", "--json").stdout
    )
    first = as_json["branches"][0]
    assert first["branch_id"] == "b1" and first["hard_flag_gating"] is True
    assert first["breakdown"]["minus_mu_x_loc_growth"] == pytest.approx(-0.1, abs=1e-15)
    assert first["breakdown"]["alpha_x_delta_5s"] == 0.25
