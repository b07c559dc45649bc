"""A log cut at its tail still links; the store's checkpoints prove it was longer.

The scenario of issue 18: the last rows of a log deleted with the triggers dropped. The
chain that is left verifies on its own, so only the checkpoints that replay saved at the
old head can tell: verify and status say so (exit 1), and replay refuses to rebuild the
projections over the shorter log unless told to (--accept-truncation).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def run(cli: Any) -> Any:
    assert cli("init", "--plugin", "notes").exit_code == 0
    return cli


def _errors(result: Any) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error:")]


def _unprotected(path: Path, sql: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                                  ).fetchall():
            db.execute(f"DROP TRIGGER {name}")
        db.execute(sql)
    finally:
        db.close()


def _log_of(run: Any, tmp_path: Path, notes: int) -> int:
    for k in range(notes):
        r = run("notes", "add", f"note {k}")
        assert r.exit_code == 0, r.output
    r = run("replay", "--json")
    assert r.exit_code == 0, r.output
    return int(json.loads(r.output)["head"]["position"])


def test_a_cut_tail_is_reported_and_replay_refuses_to_rebuild_over_it(
    run: Any, tmp_path: Path
) -> None:
    head = _log_of(run, tmp_path, 9)  # 1 enablement + 9 notes
    assert head == 10
    _unprotected(tmp_path / "cladelog.sqlite3", "DELETE FROM events WHERE position > 5")
    expected = "the log ends at 5 but checkpoints were taken at 10"

    r = run("verify")
    assert r.exit_code == 1
    assert _errors(r) == [f"error: position 6: {expected} (core.plugins, core.tlog, notes.index): "
                          "5 event(s) at its end are missing"]
    r = run("verify", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["position"] == 6 and doc["verified_to"] == 5

    r = run("status")
    assert r.exit_code == 1 and len(_errors(r)) == 1 and expected in _errors(r)[0]
    assert "behind -5" in r.output  # the table is still shown, then the reason
    r = run("status", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["damage"]["position"] == 6 and expected in doc["damage"]["reason"]

    for args in (["replay"], ["replay", "--rebuild"], ["replay", "--json"]):
        r = run(*args)
        assert r.exit_code == 1, (args, r.output)
        (line,) = _errors(r)
        assert expected in line and "--accept-truncation" in line
    # nothing was rebuilt: the evidence is still there
    assert run("verify").exit_code == 1

    r = run("replay", "--accept-truncation", "--json")
    assert r.exit_code == 0, r.output
    projections = json.loads(r.stdout)["projections"]
    # the loss is logged, one structured line per forgotten checkpoint
    warned = [json.loads(line) for line in r.stderr.splitlines()]
    assert sorted(w["projection"] for w in warned
                  if w["event"] == "replay.truncation_accepted") == ["core.plugins",
                                                                     "core.tlog",
                                                                     "notes.index"]
    assert {p["name"]: (p["position"], p["rebuilt"]) for p in projections} == \
        {"core.plugins": (5, True), "core.tlog": (5, True), "notes.index": (5, True)}
    assert run("verify").exit_code == 0
    assert run("status").exit_code == 0


def test_a_cut_tail_appended_over_again_is_reported(run: Any, tmp_path: Path) -> None:
    """Cut 3 and append 3 others: the log is as long as before, but the checkpoint names
    an event it no longer holds."""
    assert _log_of(run, tmp_path, 5) == 6
    _unprotected(tmp_path / "cladelog.sqlite3", "DELETE FROM events WHERE position > 3")
    for k in range(3):
        assert run("notes", "add", f"other {k}").exit_code == 0
    r = run("verify")
    assert r.exit_code == 1
    (line,) = _errors(r)
    assert line.startswith("error: position 6: checkpoint of projection 'core.plugins'")
    assert "the log was rewritten" in line
    assert run("replay").exit_code == 1
    assert run("replay", "--accept-truncation").exit_code == 0
    assert run("verify").exit_code == 0


def test_checkpoints_of_a_projection_no_longer_enabled_count_too(run: Any,
                                                                 tmp_path: Path) -> None:
    """Any checkpoint the store holds is evidence, whichever deployment saved it; accepting
    the loss forgets it."""
    assert _log_of(run, tmp_path, 3) == 4
    path = tmp_path / "cladelog.sqlite3"
    _unprotected(path, "INSERT INTO checkpoints SELECT 'gone.projection', version, 4, "
                       "head_hash, state, digest FROM checkpoints WHERE name = 'notes.index'")
    _unprotected(path, "DELETE FROM events WHERE position > 2")
    r = run("replay")
    assert r.exit_code == 1
    assert "(core.plugins, core.tlog, gone.projection, notes.index)" in _errors(r)[0]
    assert run("replay", "--accept-truncation").exit_code == 0
    db = sqlite3.connect(path)
    assert [n for (n,) in db.execute("SELECT name FROM checkpoints ORDER BY name")] == \
        ["core.plugins", "core.tlog", "notes.index"]
    db.close()
    assert run("verify").exit_code == 0


def test_a_forged_idempotency_record_fails_verify(run: Any, tmp_path: Path) -> None:
    note = tmp_path / "n.json"
    note.write_text(json.dumps({"stream": "s", "type": "notes.note_added",
                                "data": {"text": "a", "tags": []}}))
    assert run("append", "--idempotency-key", "K1", str(note)).exit_code == 0
    assert run("append", "--idempotency-key", "K1", str(note)).exit_code == 0
    assert run("verify").exit_code == 0
    _unprotected(tmp_path / "cladelog.sqlite3",
                 "UPDATE batches SET first_position = 1 WHERE key = 'K1'")
    r = run("verify")
    assert r.exit_code == 1
    (line,) = _errors(r)
    assert line.startswith("error: position 1: idempotency record 'K1' (positions 1..2)")


@pytest.mark.parametrize(("args", "message"), [
    (["--reconnect-timeout", "5"], "--reconnect-timeout: only with --follow"),
    (["--follow", "--reconnect-timeout", "nan"], "--reconnect-timeout: must be a number"),
    (["--follow", "--reconnect-timeout", "-1"], "--reconnect-timeout"),
    (["--follow", "--reconnect-timeout", "inf"], "--reconnect-timeout"),
])
def test_replay_reconnect_timeout_is_checked(run: Any, args: list[str], message: str) -> None:
    r = run("replay", *args)
    assert r.exit_code == 2
    (line,) = r.output.splitlines()
    assert line.startswith("error: ") and message in line


@pytest.mark.parametrize("value", ["-1", "nan", "inf", '"5"', "true", "100000"])
def test_follow_reconnect_timeout_setting_is_checked(run: Any, tmp_path: Path,
                                                     value: str) -> None:
    cfg = tmp_path / "cladelog.toml"
    cfg.write_text(cfg.read_text() + f"follow_reconnect_timeout = {value}\n")
    r = run("status")
    assert r.exit_code == 2
    (line,) = r.output.splitlines()
    assert "follow_reconnect_timeout: expected a number of seconds from 0 to 86400" in line
