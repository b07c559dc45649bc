"""`cladelog fork-score ...`: exit codes with and without a branch set, and the readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cladelog.fork_score.cli import fork_score, standalone
from click.testing import CliRunner
from fork_score_plugin_helpers import BRANCH_SCORED, fork_files


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["fork-score"]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    return fork_files(tmp_path)


def score(env: Any, files: dict[str, str], child: str, *extra: str) -> Any:
    return env.cli("fork-score", "score", "--parent", files["parent"], "--child", files[child],
                   *extra)


def branch(set_id: str, branch_id: str, child_root: str | None = None) -> list[str]:
    args = ["--branch-set", set_id, "--branch-id", branch_id, "--parent-root", "P0"]
    return args + (["--child-root", child_root] if child_root else [])


def scored_events(env: Any) -> list[Any]:
    return env.events(types=[BRANCH_SCORED])


def test_without_branch_set_prints_and_appends_nothing(cladelog_env: Any, files: Any) -> None:
    before = len(cladelog_env.events())
    accept = score(cladelog_env, files, "accept")
    assert accept.exit_code == 0, accept.output
    doc = json.loads(accept.stdout)
    assert doc["verdict"] == "ACCEPT"
    assert doc["score"] == 0.25  # delta_5S = 0.75 - 0.5 on every 5S sub-battery, alpha = 1
    for key in ("score", "verdict", "breakdown", "flags", "deltas", "missing", "weights_id"):
        assert key in doc
    assert "recorded" not in doc
    assert score(cladelog_env, files, "marginal").exit_code == 0
    assert score(cladelog_env, files, "reject").exit_code == 1
    assert len(cladelog_env.events()) == before


def test_with_branch_set_records_one_event_per_scoring(cladelog_env: Any, files: Any) -> None:
    accept = score(cladelog_env, files, "accept", *branch("S1", "b1", "c1"))
    assert accept.exit_code == 0, accept.output
    reject = score(cladelog_env, files, "reject", *branch("S1", "b2"))
    assert reject.exit_code == 1, reject.output
    events = scored_events(cladelog_env)
    assert [e.data["branch_id"] for e in events] == ["b1", "b2"]
    first, second = (e.data for e in events)
    printed = json.loads(accept.stdout)
    assert printed["score"] == 0.25  # delta_5S = 0.75 - 0.5 on every 5S sub-battery, alpha = 1
    assert printed["breakdown"]["alpha_x_delta_5s"] == 0.25
    assert printed["recorded"]["position"] == events[0].position
    assert first == {
        "branch_set_id": "S1",
        "branch_id": "b1",
        "parent_root": "P0",
        "child_root": "c1",
        "score": printed["score"],
        "verdict": "ACCEPT",
        "flags": [],
        "breakdown": printed["breakdown"],
        "weights_id": printed["weights_id"],
        "estimator_version": "0.1.0",
        "hard_flag_gating": True,
    }
    assert second["child_root"] is None  # an in-flight branch
    assert second["verdict"] == "REJECT"
    assert second["flags"] == ["REGRESSION_5S:syntax"]
    assert events[0].stream == "fork_score.branch_set:S1"
    assert events[0].meta["plugin"] == "fork-score"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--branch-set", "S1"], "--branch-set: needs --branch-id"),
        (["--branch-set", "S1", "--branch-id", "b"], "--branch-set: needs --parent-root"),
        (["--branch-id", "b"], "--branch-id: only meaningful with --branch-set"),
        (["--child-root", "c"], "--child-root: only meaningful with --branch-set"),
        (["--branch-set", "  ", "--branch-id", "b", "--parent-root", "P"],
         "--branch-set: must not be empty or blank"),
        (["--branch-set", "S", "--branch-id", "b" * 129, "--parent-root", "P"],
         "--branch-id: at most 128 characters"),
        (["--capital-delta", "lots", *branch("S1", "b1")], "--capital-delta: not a number"),
    ],
)
def test_usage_errors_exit_2_and_append_nothing(
    cladelog_env: Any, files: Any, args: list[str], fragment: str
) -> None:
    before = len(cladelog_env.events())
    result = score(cladelog_env, files, "accept", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert fragment in result.stderr
    assert len(cladelog_env.events()) == before


def test_bad_input_with_branch_set_appends_nothing(cladelog_env: Any, files: Any) -> None:
    before = len(cladelog_env.events())
    result = score(cladelog_env, files, "bad", *branch("S1", "b1"))
    assert result.exit_code == 2
    assert "child.5F.finetuning.adaptation_improvement_rate: must lie in [0, 1]" in result.stderr
    assert "Traceback" not in result.output
    missing = cladelog_env.cli("fork-score", "score", "--parent", files["parent"],
                               "--child", "/nonexistent/c.json", *branch("S1", "b1"))
    assert missing.exit_code == 2
    assert len(cladelog_env.events()) == before


def test_branch_set_show_and_list(cladelog_env: Any, files: Any) -> None:
    assert score(cladelog_env, files, "accept", *branch("S1", "b1")).exit_code == 0
    assert score(cladelog_env, files, "marginal", *branch("S1", "b2")).exit_code == 0
    assert score(cladelog_env, files, "accept", *branch("S2", "b1")).exit_code == 0
    shown = cladelog_env.cli("fork-score", "branch-set", "show", "S1", "--json",
                             "--temperature", "0.25")
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.stdout)
    assert doc["density"] == 2
    assert doc["temperature"] == 0.25
    assert [b["branch_id"] for b in doc["branches"]] == ["b1", "b2"]
    # scores 0.25 and 0 at T = 0.25: exponents 0 and -1 -> e / (e + 1) = 0.7310585786300049
    assert [b["weight"] for b in doc["branches"]] == pytest.approx(
        [0.7310585786300049, 0.2689414213699951], rel=1e-12)
    table = cladelog_env.cli("fork-score", "branch-set", "show", "S1")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0] == "branch set S1: 2 branch(es), temperature 0.05"
    assert lines[2].split()[:2] == ["1", "b1"] and lines[3].split()[:2] == ["2", "b2"]
    listed = cladelog_env.cli("fork-score", "branch-set", "list", "--json")
    assert [(s["branch_set_id"], s["density"]) for s in json.loads(listed.stdout)["branch_sets"]] \
        == [("S1", 2), ("S2", 1)]
    table = cladelog_env.cli("fork-score", "branch-set", "list")
    assert [line.split()[:2] for line in table.stdout.splitlines()[1:]] == [["S1", "2"],
                                                                           ["S2", "1"]]


def test_branch_set_show_errors(cladelog_env: Any) -> None:
    unknown = cladelog_env.cli("fork-score", "branch-set", "show", "nope")
    assert unknown.exit_code == 2
    assert "nothing recorded" in unknown.stderr
    cold = cladelog_env.cli("fork-score", "branch-set", "show", "nope", "--temperature", "0")
    assert cold.exit_code == 2
    empty = cladelog_env.cli("fork-score", "branch-set", "list")
    assert empty.stdout.strip() == "no branch sets recorded"


# -- no deployment file: the pure function --------------------------------------------------


def test_score_works_without_a_deployment_file(tmp_path: Path) -> None:
    files = fork_files(tmp_path)
    env = {"CLADELOG_CONFIG": str(tmp_path / "absent.toml")}
    for group in (fork_score, standalone):
        result = CliRunner().invoke(group, ["score", "--parent", files["parent"],
                                            "--child", files["accept"]], env=env)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["verdict"] == "ACCEPT"
    refused = CliRunner().invoke(standalone, ["score", "--parent", files["parent"], "--child",
                                              files["accept"], *branch("S", "b")], env=env)
    assert refused.exit_code == 2
    assert "--branch-set: needs a deployment" in refused.stderr
    assert not (tmp_path / "absent.toml").exists()


def test_python_m_runs_without_a_deployment(tmp_path: Path) -> None:
    files = fork_files(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "CLADELOG_CONFIG"}
    done = subprocess.run(
        [sys.executable, "-m", "cladelog.fork_score", "score", "--parent", files["parent"],
         "--child", files["reject"]],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["flags"] == ["REGRESSION_5S:syntax"]
    assert list(tmp_path.glob("*.sqlite3")) == []


PACKAGE = Path(__file__).resolve().parents[1]
COMMANDS_ENTRY_POINT = ("fork-score", "cladelog.fork_score.cli:fork_score")


def test_the_cladelog_commands_entry_point_ships_and_the_readme_says_so() -> None:
    import tomllib
    from importlib.metadata import entry_points

    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))
    declared = project["project"]["entry-points"]["cladelog.commands"]
    assert declared == dict([COMMANDS_ENTRY_POINT])
    installed = {(e.name, e.value) for e in entry_points(group="cladelog.commands")
                 if e.dist is not None and e.dist.name == "cladelog-fork-score"}
    assert installed == {COMMANDS_ENTRY_POINT}
    readme = (PACKAGE / "README.md").read_text(encoding="utf-8")
    section = readme.split("**Without a deployment file:**", 1)[1].split("\n\nMore on", 1)[0]
    # the declaration is there, so the README must not describe it as still to come
    assert "Until that declaration ships" not in section
    assert "This package declares itself there" in section
    assert 'fork-score = "cladelog.fork_score.cli:fork_score"' in section


def test_cladelog_fork_score_as_a_tool_command_without_a_deployment(tmp_path: Path) -> None:
    # Core's `cladelog` offers the commands of the entry-point group
    # `cladelog.commands` without any deployment file; fork-score's pyproject
    # declares its group there, so `cladelog fork-score score` works as a CI gate.
    work = tmp_path / "work"
    work.mkdir()
    files = fork_files(work)
    env = {k: v for k, v in os.environ.items() if k != "CLADELOG_CONFIG"}
    launcher = "import sys; from cladelog.core.cli import main; main(prog_name='cladelog')"

    def cladelog(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", launcher, *args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    accept = cladelog("fork-score", "score", "--parent", files["parent"], "--child",
                      files["accept"])
    assert accept.returncode == 0, accept.stderr
    assert json.loads(accept.stdout)["score"] == 0.25  # delta_5S = 0.75 - 0.5, alpha = 1
    reject = cladelog("fork-score", "score", "--parent", files["parent"], "--child",
                      files["reject"])
    assert reject.returncode == 1
    assert json.loads(reject.stdout)["flags"] == ["REGRESSION_5S:syntax"]
    bad = cladelog("fork-score", "score", "--parent", files["parent"], "--child", files["bad"])
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [
        "error: child.5F.finetuning.adaptation_improvement_rate: must lie in [0, 1], got 1.2"]
    refused = cladelog("fork-score", "score", "--parent", files["parent"], "--child",
                       files["accept"], *branch("S", "b"))
    assert refused.returncode == 2
    assert "--branch-set: needs a deployment" in refused.stderr
    assert sorted(p.name for p in work.iterdir()) == sorted(
        ["parent.json", "accept.json", "marginal.json", "reject.json", "bad.json"])
