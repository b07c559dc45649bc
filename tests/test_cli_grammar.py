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

PLUGINS = ("fork-score", "receipts", "lawv", "graph-engine", "consensus")

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
}


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    args = ["init"] + [a for p in PLUGINS for a in ("-p", p)]
    assert CliRunner().invoke(main, args, prog_name="cladelog").exit_code == 0
    return tmp_path


def leaves(deployment: Path) -> Iterator[tuple[str, click.Command]]:
    def walk(cmd: click.Command, ctx: click.Context, path: list[str]
             ) -> Iterator[tuple[str, click.Command]]:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, click.Context(sub, parent=ctx, info_name=name),
                                [*path, name])
        else:
            yield " ".join(path), cmd

    yield from walk(main, click.Context(main, info_name="cladelog"), [])


def _json_option(cmd: click.Command) -> Any:
    return next((p for p in cmd.params if "--json" in getattr(p, "opts", ())), None)


def test_the_walk_sees_every_packages_commands(deployment: Path) -> None:
    names = {name for name, _ in leaves(deployment)}
    for expected in ("init", "receipts add", "lawv review", "consensus tick", "graph run",
                     "fork-score branch-set show", "report", "demo", "witness add"):
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
