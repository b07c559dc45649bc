"""The deployment file is found in the working directory or a folder above it, as git
finds ``.git``; ``--config`` and ``$CLADELOG_CONFIG`` win; ``init`` acts on the working
directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.cli import main
from cladelog.core.locate import find_config, search_config
from click.testing import CliRunner


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    top = tmp_path / "deployment"
    below = top / "a" / "b"
    outside = tmp_path / "outside"
    below.mkdir(parents=True)
    outside.mkdir()
    (top / "cladelog.toml").write_text('store = "log.sqlite3"\n', encoding="utf-8")
    return {"top": top, "below": below, "outside": outside}


def test_the_working_directory_first(tree: dict[str, Path],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["top"])
    assert find_config() == Path("cladelog.toml")


def test_the_nearest_folder_above(tree: dict[str, Path],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["below"])
    assert find_config() == tree["top"] / "cladelog.toml"
    assert find_config().is_absolute()
    nearer = tree["top"] / "a" / "cladelog.toml"
    nearer.write_text('store = "other.sqlite3"\n', encoding="utf-8")
    assert find_config() == nearer
    assert search_config(tree["below"]) == nearer
    assert search_config(tree["top"]) == tree["top"] / "cladelog.toml"


def test_none_found_gives_the_working_directory_file(tree: dict[str, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["outside"])
    assert search_config() is None
    assert find_config() == Path("cladelog.toml")
    assert not find_config().exists()


def test_a_folder_named_like_the_file_is_not_a_deployment(
        tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    (tree["below"] / "cladelog.toml").mkdir()
    monkeypatch.chdir(tree["below"])
    assert find_config() == tree["top"] / "cladelog.toml"


def test_explicit_and_environment_win(tree: dict[str, Path],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["below"])
    assert find_config("x.toml") == Path("x.toml")
    monkeypatch.setenv("CLADELOG_CONFIG", "env.toml")
    assert find_config() == Path("env.toml")
    assert find_config("x.toml") == Path("x.toml")


def test_search_false_ignores_the_folders_above(tree: dict[str, Path],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["below"])
    assert find_config(search=False) == Path("cladelog.toml")


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), prog_name="cladelog")


def test_commands_in_a_subfolder_use_the_deployment_above(
        tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["top"])
    (tree["top"] / "cladelog.toml").write_text(
        'store = "log.sqlite3"\nplugins = ["notes"]\n', encoding="utf-8")
    assert run("init").exit_code == 0  # creates the store the file names
    note = tree["top"] / "note.json"
    note.write_text(json.dumps({"stream": "s", "type": "notes.note_added",
                                "data": {"text": "hi", "tags": []}}), encoding="utf-8")
    monkeypatch.chdir(tree["below"])
    appended = run("append", str(note))
    assert appended.exit_code == 0, appended.output
    status = run("status", "--json")
    assert status.exit_code == 0, status.output
    doc = json.loads(status.stdout)
    assert doc["head"]["position"] == 2  # the enablement and the note
    # the store path is relative to the deployment file, not to the working directory
    assert str((tree["top"] / "log.sqlite3").resolve()) in doc["store"]
    assert not (tree["below"] / "log.sqlite3").exists()
    # a plugin's commands are found through the deployment above too
    assert run("notes", "--help").exit_code == 0


def test_a_command_outside_any_deployment_says_where_it_looked(
        tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["outside"])
    result = run("status")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: cladelog.toml: no deployment file here or in any folder above "
        "(run 'cladelog init' or pass --config)"]


def test_init_in_a_subfolder_makes_a_new_deployment_there(
        tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["below"])
    made = run("init")
    assert made.exit_code == 0, made.output
    assert made.stdout.startswith("created: cladelog.toml")
    assert (tree["below"] / "cladelog.toml").is_file()
    assert (tree["below"] / "cladelog.sqlite3").is_file()
    assert (tree["top"] / "cladelog.toml").read_text(encoding="utf-8") == \
        'store = "log.sqlite3"\n'


def test_plugins_outside_any_deployment_says_none_is_enabled(
        tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree["outside"])
    result = run("plugins", "--json")
    assert result.exit_code == 0, result.output
    assert not any(p["enabled"] for p in json.loads(result.stdout)["plugins"])
    assert result.stderr.splitlines() == [
        "warning: no cladelog.toml found: no plugin is enabled (listing the installed ones)"]
    monkeypatch.chdir(tree["below"])
    assert run("plugins").stderr == ""
