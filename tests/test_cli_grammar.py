"""One command-line grammar across every package: the whole click command tree, walked
with every plugin enabled, checked for the rules each command must keep (``--json`` with
help text on every command that prints a result, ``-h`` everywhere)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from cladelog.core.cli import main
from click.testing import CliRunner

#: every package's plugin, and the examples a plugin author copies
PLUGINS = (
    "fork-score",
    "receipts",
    "lawv",
    "graph-engine",
    "consensus",
    "notes",
    "complexity-term",
)

#: leaf commands without --json, each with the reason: what they print is already the
#: machine-readable artifact itself (a signed note, a proof file, a JSON document)
JSON_EXEMPT = {
    "checkpoint": "prints the signed checkpoint note itself (or writes it to --out)",
    "prove": "prints the inclusion proof file itself (or writes it to --out)",
    "consistency": "prints the consistency proof file itself (or writes it to --out)",
    "witness cosign": "prints the cosigned checkpoint note itself (or writes it to --out)",
    "receipts prove": "prints the inclusion proof file itself (or writes it to --out)",
    "receipts consistency": "prints the consistency proof file itself (or writes it to --out)",
    "receipts sign": "prints the signed receipt envelope, a JSON document, itself",
    "receipts show": "prints the register entry as a JSON document always",
    "fork-score score": "prints the scored fork as a JSON document always",
    "notes show": "prints the note index as a JSON document always",
}


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    args = ["init"] + [a for p in PLUGINS for a in ("-p", p)]
    assert CliRunner().invoke(main, args, prog_name="cladelog").exit_code == 0
    return tmp_path


def leaves(deployment: Path) -> Iterator[tuple[str, click.Command]]:
    def walk(
        cmd: click.Command, ctx: click.Context, path: list[str]
    ) -> Iterator[tuple[str, click.Command]]:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, click.Context(sub, parent=ctx, info_name=name), [*path, name])
        else:
            yield " ".join(path), cmd

    yield from walk(main, click.Context(main, info_name="cladelog"), [])


def _json_option(cmd: click.Command) -> Any:
    return next((p for p in cmd.params if "--json" in getattr(p, "opts", ())), None)


def test_the_walk_sees_every_packages_commands(deployment: Path) -> None:
    names = {name for name, _ in leaves(deployment)}
    for expected in (
        "init",
        "receipts add",
        "lawv review",
        "consensus tick",
        "graph run",
        "fork-score branch-set show",
        "report",
        "demo",
        "witness add",
    ):
        assert expected in names


def test_every_command_that_prints_a_result_has_json_with_help(deployment: Path) -> None:
    missing, no_help = [], []
    names = set()
    for name, cmd in leaves(deployment):
        names.add(name)
        option = _json_option(cmd)
        if option is None:
            if name not in JSON_EXEMPT:
                missing.append(name)
        elif not (option.help or "").strip():
            no_help.append(name)
    assert missing == [], f"commands without --json: {missing}"
    assert no_help == [], f"--json without help text: {no_help}"
    assert set(JSON_EXEMPT) <= names, "an exemption names a command that is gone"


def test_the_exempt_commands_have_no_json_flag(deployment: Path) -> None:
    """An exemption that is no longer needed is removed from the list."""
    by_name = dict(leaves(deployment))
    assert [n for n in JSON_EXEMPT if _json_option(by_name[n]) is not None] == []


def groups(deployment: Path) -> Iterator[tuple[str, click.Command]]:
    def walk(
        cmd: click.Command, ctx: click.Context, path: list[str]
    ) -> Iterator[tuple[str, click.Command]]:
        if isinstance(cmd, click.Group) or not path or len(path) == 1:
            yield " ".join(path), cmd
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, click.Context(sub, parent=ctx, info_name=name), [*path, name])

    yield from walk(main, click.Context(main, info_name="cladelog"), [])


def test_every_group_and_top_level_command_takes_dash_h(deployment: Path) -> None:
    """Each group (and each command directly under the root, such as a tool's) sets -h
    itself, so it holds wherever the group runs (a console script of its own too)."""
    without = [
        name or "cladelog"
        for name, cmd in groups(deployment)
        if "-h" not in (cmd.context_settings.get("help_option_names") or ())
        and (isinstance(cmd, click.Group) or name in ("demo", "report"))
    ]
    assert without == []


@pytest.mark.parametrize(
    "args",
    [
        ["receipts", "key", "add"],
        ["lawv", "measure", "add"],
        ["consensus", "policy", "set"],
        ["graph-engine", "run"],
        ["graph", "validate"],
        ["fork-score", "branch-set", "show"],
        ["witness", "cosign"],
        ["plugins", "enable"],
        ["demo"],
        ["report"],
        ["types"],
        ["show"],
    ],
)
def test_dash_h_prints_the_help(deployment: Path, args: list[str]) -> None:
    r = CliRunner().invoke(main, [*args, "-h"], prog_name="cladelog")
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Usage: cladelog {' '.join(args)} ")


def test_graph_engine_is_the_graph_group(deployment: Path) -> None:
    runner = CliRunner()
    long = runner.invoke(main, ["graph-engine", "-h"], prog_name="cladelog").output
    short = runner.invoke(main, ["graph", "-h"], prog_name="cladelog").output
    assert long.replace("cladelog graph-engine", "cladelog graph") == short
    r = runner.invoke(main, ["graph-engine", "nope"], prog_name="cladelog")
    assert (r.exit_code, r.output) == (
        2,
        "error: No such command 'nope' (see 'cladelog graph-engine --help')\n",
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["bogus"], "error: No such command 'bogus' (see 'fork-score --help')"),
        (["score"], "error: Missing option '--parent' (see 'fork-score score --help')"),
        (
            ["branch-set", "list", "--bogus"],
            "error: No such option '--bogus' (see 'fork-score branch-set list --help')",
        ),
    ],
)
def test_the_standalone_fork_score_script_has_one_line_usage_errors(
    tmp_path: Path, argv: list[str], line: str
) -> None:
    import os
    import shutil
    import subprocess
    import sys

    script = shutil.which("fork-score", path=str(Path(sys.executable).parent)) or shutil.which(
        "fork-score"
    )
    assert script is not None
    env = {k: v for k, v in os.environ.items() if k != "CLADELOG_CONFIG"}
    r = subprocess.run(
        [script, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=60,
    )
    assert (r.returncode, r.stdout, r.stderr) == (2, "", line + "\n")
    h = subprocess.run(
        [script, "-h"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=60,
    )
    assert h.returncode == 0 and h.stdout.startswith("Usage: fork-score ")
