"""The operator CLI with several plugins installed (the integration environment has them
all): what no single package's environment can show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.cli import main
from click.testing import CliRunner


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLADELOG_ACTOR", "cli-test")
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), catch_exceptions=False, prog_name="cladelog")

    return invoke


def test_a_blocked_gate_says_why_on_stderr(run: Any) -> None:
    """fork-score blocks a candidate it never scored: one line on stderr says so."""
    assert run("init", "--plugin", "fork-score").exit_code == 0
    r = run("gate", "nobody")
    assert r.exit_code == 1
    assert "nobody: BLOCKED" in r.stdout
    assert ("  no enabled plugin knows the candidate 'nobody' (fork-score matches candidate "
            "ids; see 'cladelog gate --help')") in r.stdout.splitlines()
    (line,) = r.stderr.splitlines()
    assert line.startswith("error: nobody: blocked (no enabled plugin knows it; fork-score: ")
    assert "never scored" in line


def test_gate_on_an_id_no_plugin_knows_says_so_even_when_allowed(run: Any) -> None:
    """lawv votes on every candidate alike; with only it enabled the gate allows, and says
    that no plugin knows the id (it used to answer a bare 'allowed')."""
    assert run("init", "--plugin", "receipts", "--plugin", "lawv").exit_code == 0
    r = run("gate", "nobody")
    assert r.exit_code == 0
    assert ("  no enabled plugin knows the candidate 'nobody' (none of them matches candidate "
            "ids)") in r.stdout.splitlines()
    doc = json.loads(run("gate", "nobody", "--json").stdout)
    assert doc["known_by"] == [] and doc["allowed"] is True


def test_gate_help_says_which_id_each_plugins_vote_matches(run: Any) -> None:
    text = " ".join(run("gate", "--help").stdout.split())
    assert "Which CANDIDATE id each installed plugin's vote matches:" in text
    assert "fork-score the branch_id or child_root of a scored branch" in text
    assert "receipts casts no gate vote" in text
    assert "consensus the candidate digest C(M') a proposal names" in text
    assert "lawv no id: votes the same on every candidate" in text


def test_plugins_lists_hooks_of_other_plugins_specs_too(run: Any) -> None:
    doc = json.loads(run("plugins", "--json").stdout)
    rows = {p["name"]: p for p in doc["plugins"]}
    assert rows["complexity-term"]["hooks"] == ["fork_score_terms"]  # not a cladelog_* name
    assert "cladelog_event_types" in rows["fork-score"]["hooks"]


def test_an_unknown_command_names_the_plugins_not_enabled(run: Any) -> None:
    assert run("init", "--plugin", "receipts").exit_code == 0
    r = run("graph", "run", "x.json")
    assert r.exit_code == 2
    (line,) = r.output.splitlines()
    assert line.startswith("error: No such command 'graph' (installed plugins not enabled in ")
    assert "graph-engine" in line and "lawv" in line and "receipts," not in line


def test_without_a_deployment_file_the_hint_says_so(run: Any) -> None:
    r = run("graph", "run", "x.json")
    assert r.exit_code == 2
    (line,) = r.output.splitlines()
    assert line.startswith("error: No such command 'graph' (no deployment file cladelog.toml")
    assert "cladelog init --plugin NAME" in line and "graph-engine" in line
