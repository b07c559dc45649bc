"""Same log => same digests, whatever the deployment's settings say.

The notes plugin's ``default_tag`` setting is applied when ``cladelog notes add`` writes
a note (the tag goes into the event), never by the projection. Version 1 of the example
read the setting while replaying, so a checkpoint taken before a settings change and an
incremental replay after it disagreed with a rebuild of the very same log.
"""

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
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        r = runner.invoke(main, list(args), catch_exceptions=False)
        assert r.exit_code == 0, r.output
        return r

    return invoke


def digests(run: Any, *args: str, config: str | None = None) -> dict[str, str]:
    root = ("--config", config) if config else ()
    doc = json.loads(run(*root, "replay", "--json", *args).output)
    return {p["name"]: p["digest"] for p in doc["projections"]}


def set_default_tag(config: Path, tag: str) -> None:
    config.write_text(config.read_text() + f'\n[settings.notes]\ndefault_tag = "{tag}"\n')


def test_incremental_replay_after_a_settings_change_equals_a_rebuild(
    run: Any, tmp_path: Path
) -> None:
    run("init", "--plugin", "notes")  # position 1: the plugin's enablement
    for text in ("a", "b", "c"):
        run("notes", "add", text)  # 2..4, no tag: the default one is written
    run("notes", "add", "d", "--tag", "x")  # 5
    (tmp_path / "raw.json").write_text(
        '{"stream": "notes", "type": "notes.note_added", "data": {"text": "e"}}')
    run("append", "raw.json")  # 6: a raw event with no tags at all
    run("notes", "add", "f")  # 7
    run("notes", "add", "g")  # 8
    digests(run, "--to", "6")  # checkpoints at position 6
    set_default_tag(tmp_path / "cladelog.toml", "misc")

    # the audit's case: the rest of the log, replayed after the change, from the checkpoint
    incremental = digests(run)
    assert incremental == digests(run, "--rebuild")

    # notes written after the change carry the new default; still one answer
    run("notes", "add", "h")  # 9
    incremental = digests(run)
    assert incremental == digests(run, "--rebuild")
    assert json.loads(run("notes", "show").output) == {
        "count": 8, "tags": {"untagged": 6, "x": 1, "misc": 1}}
    log = [json.loads(x) for x in run("log", "--json", "--type", "notes.note_added")
           .output.splitlines()]
    assert [e["data"]["tags"] for e in log] == [
        ["untagged"], ["untagged"], ["untagged"], ["x"], [], ["untagged"], ["untagged"], ["misc"]]


def test_the_same_log_under_other_settings_gives_the_same_digests(
    run: Any, tmp_path: Path
) -> None:
    run("init", "--plugin", "notes")
    run("notes", "add", "a")
    (tmp_path / "raw.json").write_text(
        '{"stream": "notes", "type": "notes.note_added", "data": {"text": "b"}}')
    run("append", "raw.json")
    exported = tmp_path / "log.jsonl"
    run("export", str(exported))
    mine = digests(run)

    other = tmp_path / "other"
    other.mkdir()
    (other / "cladelog.toml").write_text(
        'store = "other.sqlite3"\nplugins = ["notes"]\n\n[settings.notes]\ndefault_tag = "zzz"\n')
    from cladelog.core.store.sqlite import SQLiteStore

    SQLiteStore(other / "other.sqlite3", create=True).close()
    cfg = str(other / "cladelog.toml")
    run("--config", cfg, "import", str(exported))
    assert digests(run, config=cfg) == mine
