"""Scoring finds the deployment above the working directory, and says so when there is none.

The same (parent, child) pair is scored in the deployment's folder, in a folder below it
and in a folder outside it. The deployment names a weights file (alpha = 2, relative to
the deployment file), so its score differs from the defaults' in a way computed by hand:
the "accept" child raises every 5S rate from 0.5 to 0.75, delta_5S = 0.25, so the score is
alpha * 0.25 = 0.5 with the deployment and 0.25 with the default alpha = 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.cli import main
from cladelog.fork_score.cli import standalone
from click.testing import CliRunner
from fork_score_plugin_helpers import fork_files

WARNING = "warning: no cladelog.toml found: default weights, no plugin terms"
WITH_DEPLOYMENT = 0.5  # alpha 2 * delta_5S 0.25
DEFAULTS = 0.25  # alpha 1 * delta_5S 0.25


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    deployment = tmp_path / "deployment"
    below = deployment / "runs" / "today"
    outside = tmp_path / "elsewhere"
    for folder in (below, outside):
        folder.mkdir(parents=True)
    (deployment / "cladelog.toml").write_text(
        'store = "log.sqlite3"\nplugins = ["fork-score"]\n\n'
        '[settings.fork-score]\nweights_file = "weights.json"\n', encoding="utf-8")
    (deployment / "weights.json").write_text('{"alpha": 2.0}', encoding="utf-8")
    monkeypatch.chdir(deployment)
    made = CliRunner().invoke(main, ["init"])  # creates the store the file names
    assert made.exit_code == 0, made.output
    files = fork_files(tmp_path)
    return {"deployment": deployment, "below": below, "outside": outside,
            "args": ["score", "--parent", files["parent"], "--child", files["accept"]]}


@pytest.mark.parametrize("group", ["cladelog fork-score", "fork-score"])
def test_the_same_pair_inside_below_and_outside(
    places: dict[str, Any], monkeypatch: pytest.MonkeyPatch, group: str
) -> None:
    def run() -> Any:
        if group == "fork-score":
            return CliRunner().invoke(standalone, places["args"], prog_name="fork-score")
        return CliRunner().invoke(main, ["fork-score", *places["args"]], prog_name="cladelog")

    for where, expected in (("deployment", WITH_DEPLOYMENT), ("below", WITH_DEPLOYMENT),
                            ("outside", DEFAULTS)):
        monkeypatch.chdir(places[where])
        result = run()
        assert result.exit_code == 0, (where, result.output)
        assert json.loads(result.stdout)["score"] == pytest.approx(expected), where
        if where == "outside":
            assert result.stderr.splitlines()[0].startswith(WARNING)
            assert len(result.stderr.splitlines()) == 1
        else:
            assert result.stderr == "", where


def test_the_installed_fork_score_script_in_a_subfolder_and_outside(
    places: dict[str, Any]
) -> None:
    script = Path(sys.executable).with_name("fork-score")
    if not script.exists():
        pytest.skip("the fork-score console script is not installed next to this Python")
    env = {k: v for k, v in os.environ.items() if k != "CLADELOG_CONFIG"}

    def run(cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(script), *places["args"]], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    below = run(places["below"])
    assert below.returncode == 0, below.stderr
    assert json.loads(below.stdout)["score"] == pytest.approx(WITH_DEPLOYMENT)
    assert below.stderr == ""
    outside = run(places["outside"])
    assert outside.returncode == 0, outside.stderr
    assert json.loads(outside.stdout)["score"] == pytest.approx(DEFAULTS)
    assert outside.stderr.startswith(WARNING)


def test_a_named_deployment_file_that_is_missing_is_named_in_the_warning(
    places: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = places["outside"] / "absent.toml"
    monkeypatch.chdir(places["below"])  # a deployment is above, but --config names another
    result = CliRunner().invoke(main, ["--config", str(missing), "fork-score",
                                       *places["args"]])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["score"] == pytest.approx(DEFAULTS)
    assert result.stderr.splitlines() == [
        f"warning: {missing}: no such deployment file: default weights, no plugin terms"]


def test_a_deployment_that_does_not_enable_fork_score_is_named_in_the_warning(
    places: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(places["outside"])
    assert CliRunner().invoke(main, ["init"]).exit_code == 0  # no plugin enabled
    result = CliRunner().invoke(standalone, places["args"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["score"] == pytest.approx(DEFAULTS)
    assert result.stderr.splitlines() == [
        "warning: cladelog.toml does not enable fork-score: default weights, no plugin terms"]
