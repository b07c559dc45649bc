"""``cladelog log --type``: a type or a glob over the known types; an unknown one is refused.

Known here: core's two types (``core.plugin_enabled``, ``core.plugin_disabled``) and the
notes example plugin's ``notes.note_added``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

#: core's own types (the plugin set, the transparency log's records) and the notes plugin's
CORE_KNOWN = ("core.checkpoint_signed, core.cosignature_received, core.plugin_disabled, "
              "core.plugin_enabled")
KNOWN = f"{CORE_KNOWN}, notes.note_added"


@pytest.fixture
def run(cli: Any) -> Any:
    return cli


@pytest.fixture
def logged(run: Any, tmp_path: Path) -> Any:
    assert run("init", "--plugin", "notes").exit_code == 0
    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(json.dumps({"stream": "s", "type": "notes.note_added",
                                         "data": {"text": t, "tags": []}}) + "\n"
                             for t in ("a", "b")), encoding="utf-8")
    assert run("append", str(notes)).exit_code == 0
    return run


def types_listed(result: Any) -> list[str]:
    assert result.exit_code == 0, result.output
    return [json.loads(line)["type"] for line in result.stdout.splitlines()]


def test_a_glob_selects_the_matching_known_types(logged: Any) -> None:
    # the append wrote the enablement (position 1) and two notes (2, 3)
    assert types_listed(logged("log", "--json", "--type", "notes.*")) == [
        "notes.note_added", "notes.note_added"]
    assert types_listed(logged("log", "--json", "--type", "core.*")) == ["core.plugin_enabled"]
    assert types_listed(logged("log", "--json", "--type", "*")) == [
        "core.plugin_enabled", "notes.note_added", "notes.note_added"]
    assert types_listed(logged("log", "--json", "--type", "core.plugin_?nabled")) == [
        "core.plugin_enabled"]


def test_globs_and_names_combine_without_repeats(logged: Any) -> None:
    assert types_listed(logged("log", "--json", "--type", "notes.*", "--type",
                               "notes.note_added", "--type", "core.plugin_enabled")) == [
        "core.plugin_enabled", "notes.note_added", "notes.note_added"]


def test_an_unknown_type_is_refused_with_the_known_ones(logged: Any) -> None:
    result = logged("log", "--type", "notes.note_addded")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: --type: unknown event type 'notes.note_addded' (known: {KNOWN})"]


def test_a_glob_that_matches_nothing_is_refused(logged: Any) -> None:
    result = logged("log", "--type", "lawv.*")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: --type: no known event type matches 'lawv.*' (known: {KNOWN})"]


def test_a_type_no_enabled_plugin_registers_is_listed_when_the_log_holds_it(
        logged: Any, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Events of a plugin not enabled here are kept; an operator can still list them."""
    exported = tmp_path / "log.jsonl"
    assert logged("export", str(exported)).exit_code == 0
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.chdir(bare)
    assert run("init").exit_code == 0  # no plugin enabled
    assert run("import", str(exported)).exit_code == 0
    assert types_listed(run("log", "--json", "--type", "notes.note_added")) == [
        "notes.note_added", "notes.note_added"]
    # a glob matches only the types this deployment knows
    refused = run("log", "--type", "notes.*")
    assert refused.exit_code == 2
    assert refused.stderr.splitlines() == [
        "error: --type: no known event type matches 'notes.*' "
        f"(known: {CORE_KNOWN})"]
