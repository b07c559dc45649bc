"""The operator CLI: every command, exit codes and one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def run(cli: Any) -> Any:
    return cli


@pytest.fixture
def notes(run: Any, tmp_path: Path) -> Any:
    r = run("init", "--plugin", "notes")
    assert r.exit_code == 0, r.output
    return run


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def head(run: Any) -> int:
    return int(json.loads(run("status", "--json").output)["head"]["position"])


def test_init_creates_and_is_safe_to_repeat(run: Any, tmp_path: Path) -> None:
    r = run("init", "--plugin", "notes")
    assert r.exit_code == 0 and "created" in r.output
    assert (tmp_path / "cladelog.toml").exists() and (tmp_path / "cladelog.sqlite3").exists()
    r = run("init")
    assert r.exit_code == 0 and "already initialised" in r.output
    r = run("init", "--plugin", "other")
    assert r.exit_code == 2 and "exists with other settings" in r.output
    assert head(run) == 0  # enablement is recorded with the first event, not by init


def test_init_then_import_and_the_enablement_is_recorded_after(notes: Any, run: Any,
                                                               tmp_path: Path) -> None:
    """An exported log goes into a deployment init just made (the portability path)."""
    notes("append", write(tmp_path / "n.json", json.dumps(
        {"stream": "s", "type": "notes.note_added", "data": {"text": "a", "tags": ["x"]}})))
    assert notes("export", str(tmp_path / "log.jsonl")).exit_code == 0
    other = tmp_path / "other"
    other.mkdir()
    os.chdir(other)
    assert run("init", "--plugin", "notes").exit_code == 0
    r = run("import", str(tmp_path / "log.jsonl"))
    assert r.exit_code == 0, r.output
    assert "imported 2 new event(s)" in r.output  # the enablement and the note
    digest = {p["name"]: p["digest"] for p in json.loads(run("replay", "--json").output)
              ["projections"]}
    os.chdir(tmp_path)
    assert digest == {p["name"]: p["digest"]
                      for p in json.loads(notes("replay", "--json").output)["projections"]}


def test_init_with_an_unknown_plugin_writes_nothing(run: Any, tmp_path: Path) -> None:
    r = run("init", "--plugin", "nope")
    assert r.exit_code == 2
    assert r.output.startswith("error: plugins: unknown plugin 'nope'")
    assert not (tmp_path / "cladelog.toml").exists()


def test_commands_without_a_deployment_fail_cleanly(run: Any) -> None:
    r = run("status")
    assert r.exit_code == 2 and "no deployment file" in r.output
    assert "Traceback" not in r.output


def test_append_log_replay_verify_status(notes: Any, tmp_path: Path) -> None:
    f = write(tmp_path / "e.jsonl",
              '{"stream": "n", "type": "notes.note_added", "data": {"text": "a", "tags": ["x"]}}\n'
              '{"stream": "n", "type": "notes.note_added", "data": {"text": "b"}}\n')
    r = notes("append", f)
    assert r.exit_code == 0 and "positions 2..3" in r.output
    lines = notes("log", "--json", "--type", "notes.note_added").output.splitlines()
    assert [json.loads(x)["data"]["text"] for x in lines] == ["a", "b"]
    assert len(notes("log", "--tail", "1").output.splitlines()) == 2  # the header and one row
    r = notes("replay", "--json")
    doc = json.loads(r.output)
    idx = {p["name"]: p for p in doc["projections"]}["notes.index"]
    assert idx["summary"] == "2 note(s), 2 tag(s)"
    r = notes("verify")
    assert r.exit_code == 0 and r.output.startswith("ok: 3 event(s) verified")
    st = json.loads(notes("status", "--json").output)
    assert st["head"]["position"] == 3
    assert {p["name"]: p["behind"] for p in st["projections"]}["notes.index"] == 0


def test_replay_human_output_has_digests(notes: Any) -> None:
    r = notes("replay")
    assert r.exit_code == 0
    line = next(x for x in r.output.splitlines() if "core.plugins" in x)
    digest = line.split()[2]
    doc = json.loads(notes("replay", "--json").output)
    assert digest == {p["name"]: p["digest"] for p in doc["projections"]}["core.plugins"]


def test_expected_version_conflict_exits_2(notes: Any, tmp_path: Path) -> None:
    item = {"stream": "n", "type": "notes.note_added", "data": {"text": "a"},
            "expected_version": 0}
    f = write(tmp_path / "e.json", json.dumps(item))
    assert notes("append", f).exit_code == 0
    r = notes("append", f)
    assert r.exit_code == 2 and "expected version 0, but it is at 1" in r.output
    assert head(notes) == 2


def test_idempotency_key(notes: Any, tmp_path: Path) -> None:
    f = write(tmp_path / "e.json", '{"stream": "n", "type": "notes.note_added", '
                                   '"data": {"text": "a"}}')
    assert notes("append", f, "--idempotency-key", "k1").exit_code == 0
    assert notes("append", f, "--idempotency-key", "k1").exit_code == 0
    assert head(notes) == 2


def test_export_import_round_trip_and_conflict(notes: Any, tmp_path: Path) -> None:
    f = write(tmp_path / "e.json", '[{"stream": "n", "type": "notes.note_added", '
                                   '"data": {"text": "a"}}]')
    notes("append", f)
    exp = tmp_path / "log.jsonl"
    assert notes("export", str(exp)).exit_code == 0
    other = tmp_path / "other"
    other.mkdir()
    cfg = str(other / "cladelog.toml")
    assert notes("--config", cfg, "init", "--plugin", "notes").exit_code == 0
    g = write(tmp_path / "g.json", '{"stream": "n", "type": "notes.note_added", '
                                   '"data": {"text": "another history"}}')
    assert notes("--config", cfg, "append", g).exit_code == 0
    # the other store has its own first events: histories conflict
    r = notes("--config", cfg, "import", str(exp))
    assert r.exit_code == 2 and "position 1" in r.output
    # an empty store takes the log, twice (idempotent)
    third = tmp_path / "third"
    third.mkdir()
    cfg3 = str(third / "cladelog.toml")
    (third / "cladelog.toml").write_text('store = "x.sqlite3"\nplugins = ["notes"]\n')
    from cladelog.core.store.sqlite import SQLiteStore
    SQLiteStore(third / "x.sqlite3", create=True).close()
    r = notes("--config", cfg3, "import", str(exp))
    assert r.exit_code == 0 and "imported 2 new event(s), 0 already" in r.output
    r = notes("--config", cfg3, "import", str(exp))
    assert "imported 0 new event(s), 2 already" in r.output
    d1 = json.loads(notes("replay", "--json").output)["projections"]
    d3 = json.loads(notes("--config", cfg3, "replay", "--json").output)["projections"]
    assert {p["name"]: p["digest"] for p in d1} == {p["name"]: p["digest"] for p in d3}


def a_note(run: Any, tmp_path: Path) -> None:
    """Append one note (the first append also records the enabled plugin: positions 1, 2)."""
    r = run("append", write(tmp_path / "note.json", json.dumps(
        {"stream": "s", "type": "notes.note_added", "data": {"text": "a", "tags": []}})))
    assert r.exit_code == 0, r.output


def test_tampered_import_is_refused(notes: Any, tmp_path: Path) -> None:
    a_note(notes, tmp_path)
    exp = tmp_path / "log.jsonl"
    notes("export", str(exp))
    lines = exp.read_text().splitlines()
    doc = json.loads(lines[0])
    doc["meta"]["actor"] = "mallory"
    exp.write_text("\n".join([json.dumps(doc), *lines[1:]]) + "\n")
    third = tmp_path / "t"
    third.mkdir()
    (third / "cladelog.toml").write_text('store = "x.sqlite3"\n')
    from cladelog.core.store.sqlite import SQLiteStore
    SQLiteStore(third / "x.sqlite3", create=True).close()
    r = notes("--config", str(third / "cladelog.toml"), "import", str(exp))
    assert r.exit_code == 1 and "hash chain does not verify" in r.output


def test_verify_reports_tampering_with_exit_1(notes: Any, tmp_path: Path,
                                              sqlite_harness: Any) -> None:
    from cladelog.core.store.sqlite import SQLiteStore

    a_note(notes, tmp_path)
    store = SQLiteStore(tmp_path / "cladelog.sqlite3")
    sqlite_harness.tamper(store, 1, "data_byte", None)
    store.close()
    r = notes("verify")
    assert r.exit_code == 1
    assert r.output.strip() == "error: position 1: hash does not match the stored event"


def test_plugins_lists_installed_and_enabled(notes: Any) -> None:
    doc = json.loads(notes("plugins", "--json").output)
    rows = {p["name"]: p for p in doc["plugins"]}
    assert rows["notes"]["enabled"] is True and rows["notes"]["version"] == "0.1.0"
    assert "cladelog_projections" in rows["notes"]["hooks"]


def test_gate_without_votes_allows(notes: Any) -> None:
    r = notes("gate", "v1")
    assert r.exit_code == 0 and "v1: allowed" in r.output


def test_help_lists_plugin_commands(notes: Any) -> None:
    r = notes("--help")
    assert r.exit_code == 0 and "notes" in r.output


def test_unknown_command_is_usage_error(notes: Any) -> None:
    assert notes("frobnicate").exit_code == 2


def test_tool_commands_work_without_a_deployment(run: Any, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    import cladelog.core.cli as cli_module
    import click

    @click.command("hello")
    def hello() -> None:
        """Say hello (a tool command)."""
        click.echo("hello from a tool")

    class FakeEntryPoint:
        value = "fake:hello"

        def load(self) -> Any:
            return hello

    monkeypatch.setattr(cli_module, "_tool_commands", lambda: {"hello": FakeEntryPoint()})
    assert "hello" in run("--help").output
    r = run("hello")
    assert r.exit_code == 0 and r.output == "hello from a tool\n"


def test_logs_are_json_lines_on_stderr_when_not_a_terminal(tmp_path: Path) -> None:
    import subprocess
    import sys

    exe = str(Path(sys.executable).with_name("cladelog"))
    env = {**os.environ, "CLADELOG_LOG_LEVEL": "info"}
    env.pop("CLADELOG_LOG_JSON", None)
    subprocess.run([exe, "init"], cwd=tmp_path, check=True, capture_output=True, env=env)
    done = subprocess.run([exe, "replay"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0
    records = [json.loads(line) for line in done.stderr.splitlines()]
    assert [r["event"] for r in records] == ["replay.done"]
    assert records[0]["level"] == "info" and records[0]["head"] == 0
    assert done.stdout.startswith("replayed to position 0")


@pytest.mark.parametrize("args,expected", [
    (("log", "--bogus"), "error: No such option '--bogus' (see 'cladelog log --help')"),
    (("replay", "--to", "x"), "error: Invalid value for '--to': 'x' is not a valid integer range"
                              " (see 'cladelog replay --help')"),
    (("gate",), "error: Missing argument 'CANDIDATE' (see 'cladelog gate --help')"),
    # (where other plugins are installed, the parenthesis names them instead of the help)
    (("nope",), "error: No such command 'nope' ("),
    (("notes", "add"), "error: Missing argument 'TEXT' (see 'cladelog notes add --help')"),
])
def test_usage_errors_are_one_line(notes: Any, args: tuple[str, ...], expected: str | None
                                   ) -> None:
    r = notes(*args)
    assert r.exit_code == 2
    lines = r.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    if expected is not None:
        assert lines[0] == expected or (expected.endswith("(") and
                                        lines[0].startswith(expected))


@pytest.mark.parametrize("doc,problem", [
    ('{"stream": "s", "type": "notes.note_added", "data": {"text": "a"}, "data": {}}',
     "duplicate member 'data'"),
    ('{"stream": "s", "type": "notes.note_added", "data": {"text": "a", "tags": [], '
     '"tags": ["x"]}}', "duplicate member 'tags'"),
    ('{"stream": "s", "type": "notes.note_added", "data": {"text": "a", "n": 1e999}}',
     "number 1e999 is out of range for a double"),
])
def test_append_refuses_ambiguous_json(notes: Any, tmp_path: Path, doc: str, problem: str
                                       ) -> None:
    before = head(notes)
    r = notes("append", write(tmp_path / "e.json", doc))
    assert r.exit_code == 2
    assert r.output.strip() == f"error: {tmp_path / 'e.json'}: invalid JSON ({problem})"
    assert head(notes) == before


def test_a_reader_that_goes_away_stops_the_command_quietly(notes: Any, tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    lines = "".join(json.dumps({"stream": "s", "type": "notes.note_added",
                                "data": {"text": f"note {i} " + "x" * 60, "tags": []}}) + "\n"
                    for i in range(3000))  # far more than a pipe buffer holds
    assert notes("append", write(tmp_path / "many.jsonl", lines)).exit_code == 0
    exe = shutil.which("cladelog", path=str(Path(sys.executable).parent))
    assert exe is not None
    for args in (["log"], ["export", "-"]):
        proc = subprocess.Popen([exe, *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()  # like `| head -1`: one line, then the pipe closes
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 141, err
        assert err == b""  # no traceback, no "Exception ignored" noise


def test_verify_json_puts_the_document_on_stdout_and_the_reason_on_stderr(
    notes: Any, tmp_path: Path, sqlite_harness: Any
) -> None:
    from cladelog.core.store.sqlite import SQLiteStore

    a_note(notes, tmp_path)
    store = SQLiteStore(tmp_path / "cladelog.sqlite3")
    sqlite_harness.tamper(store, 1, "data_byte", None)
    store.close()
    r = notes("verify", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert (doc["position"], doc["verified_to"], doc["head"]) == (1, 0, 2)  # head: the store's
    assert r.stderr.strip() == "error: position 1: hash does not match the stored event"


def test_replay_to_a_past_position_leaves_the_checkpoints(notes: Any, tmp_path: Path) -> None:
    lines = "".join(json.dumps({"stream": "s", "type": "notes.note_added",
                                "data": {"text": f"n{i}", "tags": ["t"]}}) + "\n"
                    for i in range(5))
    notes("append", write(tmp_path / "n.jsonl", lines))
    assert notes("replay").exit_code == 0
    before = json.loads(notes("status", "--json").output)["projections"]
    r = notes("replay", "--to", "3", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["head"]["position"] == 3
    assert json.loads(notes("status", "--json").output)["projections"] == before


def test_follow_stops_cleanly_on_a_signal_during_its_first_replay(
    notes: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    from cladelog.core.deployment import Deployment

    notes("append", write(tmp_path / "n.json", json.dumps(
        {"stream": "s", "type": "notes.note_added", "data": {"text": "a", "tags": []}})))
    real = Deployment.replay
    calls = []

    def replay_then_sigterm(self: Any, **kw: Any) -> Any:
        calls.append(kw)
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the first replay runs
        return real(self, **kw)

    monkeypatch.setattr(Deployment, "replay", replay_then_sigterm)
    r = notes("replay", "--follow", "--rebuild")
    assert r.exit_code == 0, r.output
    assert len(calls) == 1  # the catch-up finished; no further replay
    assert r.stdout.strip().endswith("stopped at position 2; checkpoints saved")
    assert json.loads(notes("status", "--json").output)["projections"][0]["behind"] == 0
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


@pytest.mark.parametrize("name,text,count", [
    ("-", '{\n  "stream": "s",\n  "type": "notes.note_added",\n  "data": {"text": "p"}\n}\n', 1),
    ("pretty.txt", '{\n  "stream": "s", "type": "notes.note_added", "data": {"text": "p"}\n}', 1),
    ("lines.txt", '{"stream": "s", "type": "notes.note_added", "data": {"text": "a"}}\n'
                  '{"stream": "s", "type": "notes.note_added", "data": {"text": "b"}}\n', 2),
    ("array.json", '[{"stream": "s", "type": "notes.note_added",\n'
                   '  "data": {"text": "a"}}]', 1),
])
def test_append_tells_one_document_from_json_lines(notes: Any, tmp_path: Path, name: str,
                                                   text: str, count: int) -> None:
    if name == "-":
        r = notes("append", "-", input=text)
    else:
        r = notes("append", write(tmp_path / name, text))
    assert r.exit_code == 0, r.output
    assert f"appended {count} event(s)" in r.output
