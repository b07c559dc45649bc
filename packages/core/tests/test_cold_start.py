"""The command line starts fast: ``cladelog --help`` and ``cladelog replay`` of an empty log
import only what they need (issue 22: within 4x of ``python -c 'import sqlite3, json'``,
benchmarks/README.md). Each command runs in a fresh interpreter, as the console script
runs it, and reports the modules it imported; a module listed here that an eager import
brings back fails the test (no clock involved)."""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cladelog.core.cli import _BUILTIN, main
from cladelog.core.locate import EntryPoint, entry_point_values, search_config
from click.testing import CliRunner

# the console script's own lines, then the modules it ended with, to the file in argv[1]
DRIVER = """\
import sys
out, sys.argv = sys.argv[1], ["cladelog", *sys.argv[2:]]
try:
    from cladelog.core.cli import main
    main()
finally:
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("\\n".join(sorted(sys.modules)))
"""

# never needed before a command runs, nor to list the commands
LAZY_EVERYWHERE = (
    "cattrs", "rich", "structlog", "tomlkit", "psycopg", "importlib.metadata", "asyncio",
    "logging", "difflib", "signal", "email", "zipfile",
)
# what only commands that open a deployment need (and `--help` of an empty one does not)
LAZY_FOR_HELP = (
    "attr", "attrs", "orjson", "pluggy", "hashlib", "sqlite3", "pathlib", "dataclasses",
    "cladelog.core.config", "cladelog.core.deployment", "cladelog.core.store",
    "cladelog.core.projections", "cladelog.core.transparency",
)


def imported(cwd: Path, *args: str) -> tuple[set[str], str]:
    out = cwd / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADELOG_")}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(out), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(out.read_text(encoding="utf-8").split("\n")), done.stdout


@pytest.fixture
def empty_deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    assert CliRunner().invoke(main, ["init"], prog_name="cladelog").exit_code == 0
    return tmp_path


def test_help_imports_no_deployment_machinery(empty_deployment: Path) -> None:
    modules, output = imported(empty_deployment, "--help")
    assert "click" in modules  # the driver did run the command line
    assert sorted(m for m in LAZY_EVERYWHERE + LAZY_FOR_HELP if m in modules) == []
    # and still lists every command: the transparency ones (imported for their help
    # lines) and the installed tools' (cladelog.commands)
    listed = {line.split()[0] for line in output.split("Commands:\n", 1)[1].splitlines()}
    assert set(_BUILTIN) <= listed
    assert set(entry_point_values("cladelog.commands")) <= listed


def test_replay_of_an_empty_log_imports_no_command_it_does_not_run(
        empty_deployment: Path) -> None:
    modules, output = imported(empty_deployment, "replay")
    assert output.startswith("replayed to position 0 (0 read, 0 skipped)\n")
    assert "cladelog.core.deployment" in modules
    lazy = (*LAZY_EVERYWHERE, "cladelog.core.tlog_cli", "cladelog.core.schema")
    assert sorted(m for m in lazy if m in modules) == []


def test_a_transparency_command_runs_without_the_others_having_run(
        empty_deployment: Path) -> None:
    modules, output = imported(empty_deployment, "keygen", "example.org/log")
    assert "cladelog.core.tlog_cli" in modules
    assert output.startswith("example.org/log+")
    assert (empty_deployment / "example.org_log.key").is_file()


@pytest.mark.parametrize("value", ["os.path", "os.path:join", "os : path.join",
                                   "os.path:join [extra]", "json:JSONDecoder.decode"])
def test_an_entry_point_loads_what_importlib_metadata_loads(value: str) -> None:
    ours = EntryPoint("x", value, "g", "nowhere").load()
    assert ours is md.EntryPoint(name="x", value=value, group="g").load()


def test_entry_points_first_on_the_path_wins_and_odd_folders_are_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, value in ((first, "one:cmd"), (second, "two:cmd")):
        info = folder / "pkg-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "entry_points.txt").write_text(
            f"[console_scripts]\nx = not:this\n\n[my.group]\n# a comment\nshared = {value}\n"
            f"only_{folder.name} = {value}\n", encoding="utf-8")
    (first / "no_entry_points-1.0.dist-info").mkdir()
    (first / "a_file-1.0.dist-info").write_text("not a folder", encoding="utf-8")
    (tmp_path / "archive.zip").write_bytes(b"PK")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "archive.zip"),
                                      str(first), str(second)])
    assert entry_point_values("my.group") == {"shared": "one:cmd", "only_first": "one:cmd",
                                              "only_second": "two:cmd"}


def test_search_from_a_start_with_dot_and_dotdot_parts(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    top = tmp_path / "deployment"
    (top / "a" / "b").mkdir(parents=True)
    (top / "cladelog.toml").write_text('store = "log.sqlite3"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert search_config("deployment/a/./b/") == top / "cladelog.toml"
    assert search_config("deployment/a/b/..") == top / "cladelog.toml"
    assert search_config("deployment") == Path("deployment/cladelog.toml")


def test_help_output_does_not_depend_on_which_command_ran_first(
        empty_deployment: Path) -> None:
    # the transparency commands register on first use; the help text lists them all the same
    runner = CliRunner()
    before = runner.invoke(main, ["--help"], prog_name="cladelog").output
    assert runner.invoke(main, ["keygen", "--help"], prog_name="cladelog").exit_code == 0
    assert runner.invoke(main, ["--help"], prog_name="cladelog").output == before


def test_an_in_process_command_line_leaves_the_collector_alone(
        empty_deployment: Path) -> None:
    # freezing objects out of the collector is for a process that is the command line
    # (sys.argv); a test's CliRunner or an application calling main(args) keeps its heap
    import gc

    frozen = gc.get_freeze_count()
    for args in (["--help"], ["replay"], ["keygen", "x.org/log"]):
        assert CliRunner().invoke(main, args, prog_name="cladelog").exit_code == 0
    assert gc.get_freeze_count() == frozen
