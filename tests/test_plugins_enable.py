"""`cladelog plugins enable/disable` across installed plugins (fork-score, the
complexity-term example that requires it): needs every package installed, so it runs in
the integration env, not core's."""

from __future__ import annotations

import json
import tomllib
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

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(
            main, list(args), input=input, catch_exceptions=False, prog_name="cladelog"
        )

    return invoke


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


DEPLOYMENT = """# the operator's own words
store = "cladelog.sqlite3"   # where the log lives
plugins = [
  "notes",  # the example plugin
]

[settings.notes]
# a comment inside the table
default_tag = "inbox"
"""


def test_enable_and_disable_keep_comments_and_check_requires(run: Any, tmp_path: Path) -> None:

    write(tmp_path / "cladelog.toml", DEPLOYMENT)
    r = run("plugins", "enable", "fork-score")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "enabled fork-score in cladelog.toml (plugins: notes, fork-score)\n"
    text = (tmp_path / "cladelog.toml").read_text()
    assert text.startswith("# the operator's own words\n")
    assert '  "notes",  # the example plugin\n' in text and "# a comment inside the table" in text
    assert tomllib.loads(text)["plugins"] == ["notes", "fork-score"]
    assert run("plugins", "enable", "fork-score").stdout.startswith("nothing to change")
    # requires: complexity-term needs fork-score; disabling fork-score first is refused
    doc = json.loads(run("plugins", "enable", "complexity-term", "--json").stdout)
    assert doc["enabled"] == ["complexity-term"]
    assert doc["plugins"] == ["notes", "fork-score", "complexity-term"]
    before = (tmp_path / "cladelog.toml").read_text()
    r = run("plugins", "disable", "fork-score")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        "error: NAME: 'fork-score' is required by 'complexity-term', which "
        "stays enabled (disable 'complexity-term' too, or first)\n"
    )
    assert (tmp_path / "cladelog.toml").read_text() == before  # nothing written
    assert run("plugins", "disable", "complexity-term", "fork-score").exit_code == 0
    assert tomllib.loads((tmp_path / "cladelog.toml").read_text())["plugins"] == ["notes"]
    assert run("init").exit_code == 0 and run("status").exit_code == 0  # it still opens


def test_enable_refuses_what_cannot_work(run: Any, tmp_path: Path) -> None:
    write(tmp_path / "cladelog.toml", DEPLOYMENT)
    r = run("plugins", "enable", "complexity-term")
    assert r.exit_code == 2
    assert r.stderr == (
        "error: plugins: 'complexity-term' requires 'fork-score', which this "
        "deployment does not enable (enable them together: cladelog plugins "
        "enable fork-score complexity-term)\n"
    )
    r = run("plugins", "enable", "fork-scor")
    assert r.exit_code == 2 and r.stderr.startswith(
        "error: NAME: 'fork-scor' is not an installed plugin (did you mean 'fork-score'?)"
    )
    assert (tmp_path / "cladelog.toml").read_text() == DEPLOYMENT
    (tmp_path / "cladelog.toml").unlink()
    r = run("plugins", "enable", "notes")
    assert r.exit_code == 2 and r.stderr.startswith("error: no cladelog.toml found")


def test_enable_through_a_symlink_edits_the_file_it_names(run: Any, tmp_path: Path) -> None:
    real = tmp_path / "conf" / "real.toml"
    real.parent.mkdir()
    write(real, DEPLOYMENT)
    real.chmod(0o640)
    (tmp_path / "cladelog.toml").symlink_to(real)
    assert run("plugins", "enable", "fork-score").exit_code == 0
    assert (tmp_path / "cladelog.toml").is_symlink()
    assert '"fork-score"' in real.read_text() and real.stat().st_mode & 0o777 == 0o640
