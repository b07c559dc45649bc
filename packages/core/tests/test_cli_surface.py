"""The operator CLI's shared surface: --json on every command, numbers for people,
progress on stderr, show, types, replay --expect, plugins enable/disable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest


@pytest.fixture
def run(cli: Any) -> Any:
    return cli


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def note(text: str, stream: str = "s") -> dict[str, Any]:
    return {"stream": stream, "type": "notes.note_added", "data": {"text": text, "tags": []}}


@pytest.fixture
def notes(run: Any, tmp_path: Path) -> Any:
    assert run("init", "--plugin", "notes").exit_code == 0
    events = "\n".join(json.dumps(note(t)) for t in ("a", "b", "c")) + "\n"
    assert run("append", write(tmp_path / "n.jsonl", events)).exit_code == 0
    return run


# -- --json on the commands that lacked it ---------------------------------------------------


def test_init_append_export_import_print_json(run: Any, tmp_path: Path) -> None:
    r = run("init", "--plugin", "notes", "--json")
    doc = json.loads(r.output)
    assert doc["created"] is True and doc["plugins"] == ["notes"] and doc["head"] == 0
    assert doc["path"] == str(tmp_path / "cladelog.toml")
    assert json.loads(run("init", "--json").output)["created"] is False
    r = run("append", write(tmp_path / "n.json", json.dumps([note("a"), note("b")])), "--json")
    assert json.loads(r.output) == {"appended": 2, "first": 2, "last": 3}  # 1: plugins
    r = run("export", "out.jsonl", "--json")
    assert json.loads(r.output) == {"exported": 3, "file": str(tmp_path / "out.jsonl")}
    r = run("export", "-", "--json")
    assert r.exit_code == 2
    assert r.stderr == "error: --json: not with FILE '-' (stdout is the exported log)\n"
    (tmp_path / "other").mkdir()
    r = run("-c", "other/cladelog.toml", "init", "-p", "notes")
    assert r.exit_code == 0
    r = run("-c", "other/cladelog.toml", "import", "out.jsonl", "--json")
    doc = json.loads(r.output)
    assert doc["appended"] == 3 and doc["already_present"] == 0
    assert doc["head"]["position"] == 3


# -- numbers for people ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.08943000000000002, "0.0894"),
        (-0.05499999999999999, "-0.0550"),
        (1.0, "1.0000"),
        (7, "7"),
        (-0.0000001, "-1.00e-07"),
        (-0.00004, "-4.00e-05"),
        (0.00005, "0.0001"),  # rounds half to even on the binary value: 5e-05 is a bit over
        (-0.0, "0.0000"),
        (12345678.25, "12,345,678.2"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
    ],
)
def test_human_number(value: float, shown: str) -> None:
    from cladelog.core import human_number

    assert human_number(value) == shown


# -- progress ----------------------------------------------------------------------------------


def test_progress_goes_to_stderr_only_when_asked_and_never_into_json(notes: Any) -> None:
    quiet = notes("export", "x.jsonl", "--json")
    assert quiet.stderr == ""  # not a terminal, not asked
    shown = notes("export", "y.jsonl", "--json", "--progress")
    assert json.loads(shown.stdout)["exported"] == 4
    assert "exporting" in shown.stderr and "4/4" in shown.stderr


# -- replay --expect, the plugin sets, skipped counts ------------------------------------------


def test_replay_expect_passes_on_the_same_log_and_names_what_differs(
    notes: Any, tmp_path: Path
) -> None:
    saved = notes("replay", "--json")
    assert saved.exit_code == 0
    write(tmp_path / "saved.json", saved.stdout)
    same = notes("replay", "--expect", "saved.json")
    assert same.exit_code == 0, same.stderr
    assert "  expect: every digest matches saved.json" in same.stdout
    doc = json.loads(saved.stdout)
    for row in doc["projections"]:
        if row["name"] == "notes.index":
            row["digest"] = "0" * 64
    write(tmp_path / "changed.json", json.dumps(doc))
    r = notes("replay", "--expect", "changed.json", "--json")
    assert r.exit_code == 1
    assert json.loads(r.stdout)["expect"] == {
        "file": "changed.json",
        "match": False,
        "differ": ["notes.index"],
    }
    assert r.stderr == (
        "error: --expect: changed.json: the digests of 1 projection(s) "
        "differ: notes.index (saved at head 4, replayed to 4)\n"
    )


def test_replay_expect_refuses_a_file_that_is_not_a_replay_document(
    notes: Any, tmp_path: Path
) -> None:
    for text, message in (
        (
            "[1]",
            "error: --expect: bad.json: not a 'replay --json' document (no projections list)\n",
        ),
        (
            '{"projections": [{"name": "x"}]}',
            "error: --expect: bad.json: projections[0]: needs a name and a digest\n",
        ),
    ):
        write(tmp_path / "bad.json", text)
        r = notes("replay", "--expect", "bad.json")
        assert (r.exit_code, r.stdout, r.stderr) == (2, "", message)
    r = notes("replay", "--expect", "missing.json")
    assert r.exit_code == 2 and r.stderr.startswith("error: --expect: missing.json: cannot read")


def test_replay_shows_both_plugin_sets_when_they_differ_and_the_skipped_count(
    notes: Any, tmp_path: Path
) -> None:
    same = notes("replay")
    assert "(4 read, 0 skipped)" in same.stdout.splitlines()[0]
    assert "plugins recorded" not in same.stdout
    write(tmp_path / "cladelog.toml", 'store = "cladelog.sqlite3"\nplugins = []\n')
    r = notes("replay", "--rebuild")
    lines = r.stdout.splitlines()
    assert lines[0] == "replayed to position 4 (4 read, 3 skipped)"
    assert "  skipped 3 event(s) of unknown type notes.note_added (kept in the log)" in lines
    assert "  plugins recorded in the log:     notes 0.1.0" in lines
    assert "  plugins this deployment enables: none" in lines
    doc = json.loads(notes("replay", "--json", "--rebuild").stdout)
    assert doc["plugins"] == {"recorded": {"notes": "0.1.0"}, "enabled": {}}
    assert doc["skipped"] == 3


# -- log and show --------------------------------------------------------------------------------


def test_log_has_a_header_aligned_columns_and_the_actor(notes: Any, tmp_path: Path) -> None:
    notes("append", write(tmp_path / "long.json", json.dumps(note("x" * 200, "a-longer-stream"))))
    lines = notes("log").stdout.splitlines()
    assert lines[0].split() == ["POSITION", "RECORDED", "AT", "STREAM", "TYPE", "ACTOR", "DATA"]
    assert len(lines) == 1 + 5
    type_at = lines[0].index("TYPE")
    actor_at = lines[0].index("ACTOR")
    for line in lines[2:]:  # the notes: every row's type and actor start under the header
        assert line[type_at:].startswith("notes.note_added ")
        assert line[actor_at:].startswith("cli-test ")
    assert lines[-1].lstrip().startswith("5 ") and "a-longer-stream@1" in lines[-1]
    assert lines[-1].endswith("...")  # the data is cut; 'show' prints it whole
    assert lines[1].lstrip().startswith("1 ") and "core.plugin_enabled" in lines[1]
    assert len(notes("log", "--tail", "1").stdout.splitlines()) == 2  # header + one row
    assert notes("log", "--stream", "nobody").stdout == ""  # no rows: not even the header


def test_log_pages_line_up(notes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from cladelog.core import cli

    monkeypatch.setattr(cli, "LOG_PAGE", 2)
    lines = notes("log").stdout.splitlines()
    assert len(lines) == 1 + 4 and lines[0].startswith("POSITION")
    assert len({line.index("notes.note_added") for line in lines[2:]}) == 1


def test_show_prints_one_whole_event(notes: Any, tmp_path: Path) -> None:
    text = "y" * 300
    notes("append", write(tmp_path / "one.json", json.dumps(note(text))))
    r = notes("show", "5")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["position", "5"]
    assert lines[1].split() == ["stream", "s@4"]
    assert lines[2].split() == ["type", "notes.note_added", "(schema", "v2)"]
    assert ["actor", "cli-test"] in [line.split() for line in lines]
    assert f'    "text": "{text}"' in lines  # whole, not cut
    doc = json.loads(notes("show", "5", "--json").stdout)
    exported = [json.loads(line) for line in notes("export", "-").stdout.splitlines()]
    assert doc == exported[4]
    missing = notes("show", "9")
    assert (missing.exit_code, missing.stdout) == (2, "")
    assert missing.stderr == "error: POSITION: no event at position 9 (the log holds 1..5)\n"


# -- event types ---------------------------------------------------------------------------------


def test_an_unknown_event_type_lists_the_known_ones(notes: Any, tmp_path: Path) -> None:
    r = notes(
        "append",
        write(tmp_path / "bad.json", json.dumps({"stream": "s", "type": "notes.nope", "data": {}})),
    )
    assert r.exit_code == 2
    (line,) = r.stderr.splitlines()
    assert line.endswith(
        "unknown event type 'notes.nope' (no enabled plugin registers it; "
        "known: core.checkpoint_signed, core.cosignature_received, "
        "core.plugin_disabled, core.plugin_enabled, notes.note_added)"
    )


def test_types_lists_each_type_with_its_plugin_and_schema_versions(notes: Any) -> None:
    lines = notes("types").stdout.splitlines()
    assert lines[0].split() == ["TYPE", "PLUGIN", "SCHEMA", "DESCRIPTION"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["notes.note_added"][1:3] == ["notes", "v1..v2"]
    assert rows["core.plugin_enabled"][1:3] == ["core", "v1"]
    assert set(rows) == {
        "core.checkpoint_signed",
        "core.cosignature_received",
        "core.plugin_disabled",
        "core.plugin_enabled",
        "notes.note_added",
    }
    only = notes("types", "notes.*").stdout.splitlines()
    assert [line.split()[0] for line in only[1:]] == ["notes.note_added"]
    r = notes("types", "nope.*")
    assert r.exit_code == 2 and r.stderr.startswith(
        "error: TYPE: no known event type matches 'nope.*' (known: core.checkpoint_signed,"
    )


def test_types_json_schemas_accept_the_logged_events(notes: Any) -> None:
    import jsonschema

    doc = json.loads(notes("types", "--json").stdout)
    by_name = {t["name"]: t for t in doc["types"]}
    assert by_name["notes.note_added"]["schema_versions"] == [1, 2]
    for t in doc["types"]:
        jsonschema.Draft202012Validator.check_schema(t["json_schema"])
    events = [json.loads(line) for line in notes("export", "-").stdout.splitlines()]
    for e in events:
        jsonschema.validate(e["data"], by_name[e["type"]]["json_schema"])
    schema = by_name["notes.note_added"]["json_schema"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"text": "a", "tags": [], "extra": 1}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"text": 5, "tags": []}, schema)


@attrs.frozen
class Inner:
    k: str


@attrs.frozen
class Sample:
    n: int
    x: float
    flag: bool
    items: list[str]
    inner: Inner
    by_name: dict[str, int]
    pair: tuple[int, ...] = ()
    maybe: str | None = None
    mode: Literal["a", "b"] = "a"
    free: Any = None


def test_json_schema_agrees_with_the_strict_structure_rules() -> None:
    """The schema and :func:`cladelog.core.schema.structure` accept and refuse the same
    documents (the schema is read from the same annotations, checked here by an
    independent validator)."""
    import jsonschema
    from cladelog.core.schema import PayloadError, json_schema, structure

    good = {
        "n": 1,
        "x": 1.5,
        "flag": True,
        "items": ["a"],
        "inner": {"k": "v"},
        "by_name": {"a": 1},
    }
    cases = [
        good,
        good | {"x": 2, "maybe": "m", "pair": [1, 2], "free": {"any": [1]}},
        good | {"n": "1"},
        good | {"n": 1.5},
        good | {"flag": 1},
        good | {"items": "ab"},
        good | {"inner": {"k": "v", "extra": 1}},
        good | {"by_name": {"a": "1"}},
        good | {"unknown": 1},
        {k: v for k, v in good.items() if k != "n"},
        good | {"maybe": 3},
        good | {"mode": "c"},
        good | {"mode": "b", "free": [1, "x"]},
        good | {"n": 2**53},
    ]
    schema = json_schema(Sample)
    jsonschema.Draft202012Validator.check_schema(schema)
    for case in cases:
        try:
            structure(case, Sample)
            accepted = True
        except PayloadError:
            accepted = False
        except Exception:  # a value the canonical encoding refuses later (2**53)
            accepted = False
        valid = jsonschema.Draft202012Validator(schema).is_valid(case)
        if case.get("n") == 2**53:  # the canonical encoding, not structure, refuses it
            assert not valid
            continue
        assert valid == accepted, case


# -- plugins enable / disable and the listing ----------------------------------------------------

DEPLOYMENT = """# the operator's own words
store = "cladelog.sqlite3"   # where the log lives
plugins = [
  "notes",  # the example plugin
]

[settings.notes]
# a comment inside the table
default_tag = "inbox"
"""


def test_disable_keeps_the_plugins_settings_as_comments(run: Any, tmp_path: Path) -> None:
    import tomllib

    write(tmp_path / "cladelog.toml", DEPLOYMENT)
    assert run("plugins", "disable", "notes").exit_code == 0
    text = (tmp_path / "cladelog.toml").read_text()
    assert tomllib.loads(text) == {"store": "cladelog.sqlite3", "plugins": []}
    assert '# [settings.notes]\n# # a comment inside the table\n# default_tag = "inbox"' in text
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".cladelog")] == []


def test_plugins_lists_description_and_module_and_warns_about_unknown_hooks(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    from cladelog.core import PluginInfo, hookimpl
    from cladelog.core import plugins as plugins_module

    typo = types.ModuleType("typo_plugin")
    typo.PLUGIN = PluginInfo(name="typo", version="1.0", description="a plugin with a typo")

    @hookimpl
    def cladelog_projection() -> tuple[Any, ...]:
        return ()

    typo.cladelog_projection = cladelog_projection

    @hookimpl(optionalhook=True)
    def someone_elses_hook() -> None:  # optional: no warning when its spec is absent
        return None

    typo.someone_elses_hook = someone_elses_hook

    class Entry:
        name, value, dist = "typo", "typo_plugin", None

        def load(self) -> Any:
            return typo

    real = plugins_module.installed_plugins
    monkeypatch.setattr(plugins_module, "installed_plugins", lambda: {**real(), "typo": Entry()})
    r = run("plugins")
    assert r.stderr.splitlines()[-1] == (
        "warning: plugin typo: hook implementation "
        "'cladelog_projection' matches no hook spec (did you "
        "mean 'cladelog_projections'?)"
    )
    row = next(line for line in r.stdout.splitlines() if " typo " in line)
    assert row.split()[:5] == ["disabled", "typo", "1.0", "-", "typo_plugin"]
    assert row.endswith(" a plugin with a typo")
    assert r.stdout.splitlines()[1].split() == [
        "STATE",
        "PLUGIN",
        "VERSION",
        "REQUIRES",
        "MODULE",
        "DESCRIPTION",
    ]
    doc = json.loads(run("plugins", "--json").stdout)
    rows = {p["name"]: p for p in doc["plugins"]}
    assert rows["typo"]["unknown_hooks"] == [
        {"name": "cladelog_projection", "hint": "did you mean 'cladelog_projections'?"}
    ]
    assert rows["notes"]["module"] == "cladelog_notes.plugin"
    assert rows["notes"]["description"] == "example plugin: notes with tags"
    assert rows["notes"]["unknown_hooks"] == []


def test_verify_and_replay_show_progress_on_stderr_only(notes: Any) -> None:
    plain = notes("verify")
    shown = notes("verify", "--progress")
    assert shown.stdout == plain.stdout and plain.stderr == ""
    assert "verifying (the chain and tree, then the event rules)" in shown.stderr
    assert "8/8" in shown.stderr  # 4 events, walked twice
    r = notes("replay", "--rebuild", "--json", "--progress")
    assert json.loads(r.stdout)["events_read"] == 4
    assert "replaying" in r.stderr and "4/4" in r.stderr
    assert notes("import", "missing.jsonl", "--progress").stderr.startswith("error: ")


def test_on_a_terminal_the_bar_is_shown_without_asking_and_stdout_stays_json(
    notes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cladelog.core import output

    monkeypatch.setattr(output, "_stderr_is_terminal", lambda: True)
    r = notes("export", "t.jsonl", "--json")
    assert json.loads(r.stdout)["exported"] == 4
    assert "exporting" in r.stderr
