"""Issue 18, sections 1 and 2: import holds the rules append holds, and no input reaches
"internal error".

- a generated corpus of hostile input (append, import, command-line arguments, deployment
  files): each one exit 2 (or 1 for a broken chain), exactly one ``error:`` line, no
  traceback, the log's head and count unchanged;
- a tamper sweep over every column of a demo-like log: ``verify`` and ``replay --rebuild``
  exit 1 naming the tampered position;
- the import property: a single-field change of a valid export that an append would refuse
  is refused by import, the chain rehashed so that only the rule can catch it;
- a log that already holds such events (written by hand, or by an older cladelog):
  ``verify`` lists every rule every event breaks, ``append`` and ``replay`` still work.

The commands run in-process (click's CliRunner) except where the real argv bytes matter.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.cli import main
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

NOTE = {"stream": "n", "type": "notes.note_added", "data": {"text": "a"}}
GENESIS = "0" * 64
# The documented form of recorded_at, as this test reads docs/events.md (not cladelog's code)
TIME_FORM = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")


# -- helpers --------------------------------------------------------------------------------


def cli(config: Path, *args: str, input: str | bytes | None = None) -> Any:
    return CliRunner().invoke(main, ["--config", str(config), *args], input=input)


def state_of(store: Path) -> tuple[int, str]:
    """(count, head hash) read straight from the file, not through cladelog."""
    db = sqlite3.connect(store)
    try:
        n, = db.execute("SELECT COUNT(*) FROM events").fetchone()
        row = db.execute("SELECT hash FROM events ORDER BY position DESC LIMIT 1").fetchone()
        return n, row[0] if row else GENESIS
    finally:
        db.close()


def assert_one_error(r: Any, code: int) -> str:
    """Exit ``code``, exactly one line on stderr and it starts ``error:``; no traceback."""
    assert r.exit_code == code, (r.exit_code, r.output, r.exception)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    return str(err[0])


def body(d: dict[str, Any]) -> bytes:
    """The hashed body (docs/events.md): the event without ``hash`` as canonical JSON
    (sorted keys, no spaces; the events here hold no numbers but small integers)."""
    return json.dumps({k: v for k, v in d.items() if k != "hash"}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def rehash(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Relink and rehash an export, so that only a rule (not the chain) can refuse it."""
    prev = GENESIS
    out = []
    for d in docs:
        d = {**d, "prev_hash": prev}
        d["hash"] = hashlib.sha256(bytes.fromhex(prev) + body(d)).hexdigest()
        prev = d["hash"]
        out.append(d)
    return out


def write_jsonl(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                    encoding="utf-8")
    return path


# -- a demo-like log ------------------------------------------------------------------------


def _build_log(root: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A notes deployment with several streams, batches, tags, an idempotent batch and a
    saved projection checkpoint; returns its config and its export."""
    cfg = root / "cladelog.toml"
    assert cli(cfg, "init", "--plugin", "notes").exit_code == 0
    for batch in range(10):
        items = [{"stream": f"topic-{(batch + i) % 4}", "type": "notes.note_added",
                  "data": {"text": f"note {batch}.{i} \u00e9\u4e2d", "tags": [f"t{i % 3}"]}}
                 for i in range(batch % 3 + 4)]
        f = root / "batch.jsonl"
        write_jsonl(f, items)
        extra = ["--idempotency-key", f"batch-{batch}"] if batch % 2 else []
        r = cli(cfg, "append", str(f), *extra)
        assert r.exit_code == 0, r.output
    assert cli(cfg, "replay").exit_code == 0
    r = cli(cfg, "export", "-")
    assert r.exit_code == 0
    return cfg, [json.loads(line) for line in r.stdout.splitlines()]


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    return _build_log(tmp_path_factory.mktemp("demo-like"))


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """An empty notes deployment; its config path."""
    cfg = tmp_path / "fresh" / "cladelog.toml"
    assert cli(cfg, "init", "--plugin", "notes").exit_code == 0
    return cfg


@pytest.fixture
def copy_of(demo_log: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> Path:
    """A private copy of the demo-like log's deployment; its config path."""
    src = demo_log[0].parent
    dst = tmp_path / "copy"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.jsonl"))
    return dst / "cladelog.toml"


# -- 1. the hostile-input corpus ------------------------------------------------------------

CONTROL = ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\u2028", "\u200e"]
NOT_STRINGS: list[Any] = [None, 0, 1.5, True, [], {}, ["n"]]


def _append_cases() -> list[tuple[str, bytes]]:
    def item(**over: Any) -> bytes:
        return json.dumps({**NOTE, **over}).encode()

    cases: list[tuple[str, bytes]] = []
    for c in CONTROL:
        cases.append((f"stream with U+{ord(c):04X}", item(stream=f"a{c}b")))
    for v in NOT_STRINGS:
        cases.append((f"stream {v!r}", item(stream=v)))
        cases.append((f"type {v!r}", item(type=v)))
    cases += [("stream empty", item(stream="")), ("stream 201 chars", item(stream="s" * 201)),
              ("stream core.plugins", item(stream="core.plugins")),
              ("stream core.plugins as plugin record",
               item(stream="core.plugins", type="core.plugin_enabled",
                    data={"name": "notes", "version": "9"})),
              ("stream lone surrogate", b'{"stream": "a\\ud800", "type": "notes.note_added", '
                                        b'"data": {"text": "a"}}')]
    for t in ("core.plugin_enabled", "core.plugin_disabled", "core.other", "notes.bogus",
              "nobody.registers_this", "Notes.Note_Added", "notes", "", "notes..x", "1.x"):
        cases.append((f"type {t!r}", item(type=t, data={"name": "x", "version": "1"})))
    for m in ([], 0, 1, False, True, "", "x", None, [{}], 0.5):
        cases.append((f"meta {m!r}", item(meta=m)))
    for m in ({"plugin": "other"}, {"plugin": "core"}, {"plugin": None},
              {"plugin_version": "9.9"}, {"plugin_version": 1}, {"actor": ""},
              {"actor": 5}, {"actor": None}, {"correlation_id": ""}, {"correlation_id": []},
              {"actor": float("nan")}):
        cases.append((f"meta {m!r}", item(meta=m)))
    for d in (None, [], "text", 5, {"text": 5}, {"text": None}, {"tags": []},
              {"text": "a", "tags": "x"}, {"text": "a", "tags": [1]}, {"text": "a", "x": 1},
              {"text": "a", "tags": [[]]}, {"text": "a" * 10, "tags": [None]}):
        cases.append((f"data {d!r}", item(data=d)))
    for sv in (0, -1, 1, 3, 99, "2", 2.0, True, None, [2]):
        if sv is None:
            continue
        cases.append((f"schema_version {sv!r}", item(schema_version=sv)))
    for ev in (-1, "0", 1.5, True, None, [0]):
        cases.append((f"expected_version {ev!r}", item(expected_version=ev)))
    cases += [
        ("expected_version stale", item(expected_version=5)),
        ("conflicting expected versions",
         item(expected_version=0) + b"\n" + item(expected_version=1)),
        ("unknown field", item(bogus=1)), ("no data", json.dumps(
            {"stream": "n", "type": "notes.note_added"}).encode()),
        ("not an object", b"42"), ("array of non-objects", b"[1, 2]"), ("empty", b""),
        ("empty array", b"[]"), ("blank lines", b"\n\n  \n"), ("truncated", b'{"stream": "n'),
        ("NaN", item(data={"text": "a"}).replace(b'"a"', b"NaN")),
        ("Infinity", b'{"stream": "n", "type": "notes.note_added", "data": {"t": Infinity}}'),
        ("huge number", b'{"stream": "n", "type": "notes.note_added", "data": {"text": 1e999}}'),
        ("duplicate key", b'{"stream": "n", "stream": "m", "type": "notes.note_added", '
                          b'"data": {"text": "a"}}'),
        ("deep nesting", b"[" * 50_000 + b"]" * 50_000),
        ("deep object", b'{"a":' * 20_000 + b"1" + b"}" * 20_000),
        ("invalid UTF-8", b'{"stream": "n\xff", "type": "notes.note_added", "data": {}}'),
        ("UTF-16", json.dumps(NOTE).encode("utf-16")),
        ("second item bad", item() + b"\n" + item(data={"text": 1})),
        ("good then garbage", item() + b"\n{"),
        ("binary", bytes(range(256))),
    ]
    return cases


def _arg_cases(work: Path) -> list[tuple[str, list[str], str | None]]:
    """(name, command-line arguments after --config, input)."""
    good = str(work / "good.json")
    big = "100000000000000000000"
    cases: list[tuple[str, list[str], str | None]] = []
    for opt in ("--from", "--to", "--tail"):
        for v in (big, "-1", "0", "x", "1.5", "", str(2**63), "9" * 400):
            cases.append((f"log {opt} {v[:20]}", ["log", opt, v], None))
    for v in (big, "-1", "x", str(2**63)):
        cases.append((f"replay --to {v[:20]}", ["replay", "--to", v], None))
    for path in ("/nonexistent/dir/out.jsonl", "/", str(work), "/proc/version/x",
                 str(work / "good.json" / "x")):
        cases.append((f"export {path}", ["export", path], None))
    for key in ("\udcff", "a\udcffb", "", "a\x00b", "\x1b[31m", "k" * 201, "\ud800"):
        cases.append((f"idempotency key {key[:8]!r}",
                      ["append", "--idempotency-key", key, good], None))
    for args in (["log", "--stream"], ["log", "--type"], ["gate"], ["init", "--store"],
                 ["init", "--plugin"]):  # argv bytes that are not UTF-8
        cases.append((f"{' '.join(args)} \\xff", [*args, "\udcff"], None))
    cases += [
        ("init --store with NUL", ["init", "--store", "a\x00b"], None),
        # names no file system takes (a NUL and a lone surrogate only reach an API caller;
        # a name too long comes from any shell)
        ("export to a name with NUL", ["export", "a\x00b"], None),
        ("import from a name with NUL", ["import", "a\x00b"], None),
        ("append from a lone surrogate", ["append", "\ud800"], None),
        ("export to a name too long", ["export", "x" * 5000], None),
        ("export over the store itself", ["export", str(work / "cladelog.sqlite3")], None),
        ("export over the store's WAL", ["export", str(work / "cladelog.sqlite3-wal")], None),
        ("append from a name too long", ["append", "x" * 5000], None),
        ("append missing file", ["append", str(work / "missing.json")], None),
        ("append a directory", ["append", str(work)], None),
        ("import missing file", ["import", str(work / "missing.jsonl")], None),
        ("import a directory", ["import", str(work)], None),
        ("unknown command", ["frobnicate"], None),
        ("unknown option", ["log", "--bogus"], None),
        ("append no file", ["append"], None),
        ("gate no candidate", ["gate"], None),
        ("replay --follow --to", ["replay", "--follow", "--to", "3"], None),
        ("append stdin garbage", ["append", "-"], "{nope"),
        ("import stdin garbage", ["import", "-"], "{nope"),
        ("log --type twice bad", ["log", "--from", "5", "--to", "x"], None),
    ]
    return cases


def _config_cases() -> list[tuple[str, bytes]]:
    deep = 5000
    cases = [
        ("arrays 5000 deep", b"plugins = " + b"[" * deep + b"]" * deep + b"\n"),
        ("arrays 5000 deep in store", b"store = " + b"[" * deep + b"]" * deep + b"\n"),
        ("inline tables 5000 deep", b"x = " + b"{a = " * deep + b"1" + b"}" * deep + b"\n"),
        ("dotted key 2000 long", b"settings." + b".".join([b"a"] * 2000) + b" = 1\n"),
        ("invalid TOML", b"store = \n"), ("binary", bytes(range(256))),
        ("invalid UTF-8", b'store = "a\xff"\n'), ("empty", b""),
        ("store a number", b"store = 5\n"), ("store empty", b'store = ""\n'),
        ("store an array", b'store = ["a"]\n'),
        ("plugins a string", b'store = "s.sqlite3"\nplugins = "notes"\n'),
        ("plugins numbers", b'store = "s.sqlite3"\nplugins = [1]\n'),
        ("plugin twice", b'store = "s.sqlite3"\nplugins = ["notes", "notes"]\n'),
        ("unknown plugin", b'store = "s.sqlite3"\nplugins = ["nope"]\n'),
        ("unknown key", b'store = "s.sqlite3"\nbogus = 1\n'),
        ("actor a number", b'store = "s.sqlite3"\nactor = 5\n'),
        ("settings a string", b'store = "s.sqlite3"\nsettings = "x"\n'),
        ("settings of a plugin not enabled", b'store = "s.sqlite3"\n[settings.other]\nx = 1\n'),
        ("unknown setting", b'store = "s.sqlite3"\nplugins = ["notes"]\n'
                            b'[settings.notes]\nbogus = 1\n'),
        ("bad setting type", b'store = "s.sqlite3"\nplugins = ["notes"]\n'
                             b'[settings.notes]\ndefault_tag = 5\n'),
        ("empty setting", b'store = "s.sqlite3"\nplugins = ["notes"]\n'
                          b'[settings.notes]\ndefault_tag = " "\n'),
        ("unknown URL scheme", b'store = "mysql://x/y"\n'),
        ("store not there", b'store = "missing/none.sqlite3"\nplugins = ["notes"]\n'),
        ("store is not SQLite", b'store = "cladelog.toml"\nplugins = ["notes"]\n'),
        ("duplicate key", b'store = "a"\nstore = "b"\n'),
        ("store with NUL", b'store = "a\\u0000b"\nplugins = ["notes"]\n'),
        ("actor not a string", b'store = "s.sqlite3"\nplugins = ["notes"]\nactor = [1]\n'),
    ]
    return cases


APPEND_CASES = _append_cases()
CONFIG_CASES = _config_cases()


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small log every corpus case is thrown at (each must leave it as it is)."""
    root = tmp_path_factory.mktemp("target")
    cfg = root / "cladelog.toml"
    assert cli(cfg, "init", "--plugin", "notes").exit_code == 0
    (root / "good.json").write_text(json.dumps(NOTE), encoding="utf-8")
    assert cli(cfg, "append", str(root / "good.json")).exit_code == 0
    assert cli(cfg, "append", "--idempotency-key", "used", str(root / "good.json")).exit_code == 0
    return cfg


def test_the_corpus_is_large_enough(target: Path) -> None:
    imports = _import_cases()
    n = (len(APPEND_CASES) + len(_arg_cases(target.parent)) + len(CONFIG_CASES) + len(imports)
         + len(MALFORMED_LINES))
    assert n >= 200, n
    from cladelog.core.rules import RULES

    assert {c[4] for c in imports} == set(RULES)  # the import cases reach every rule


@pytest.mark.parametrize("name,payload", APPEND_CASES, ids=[c[0] for c in APPEND_CASES])
def test_hostile_append(target: Path, name: str, payload: bytes) -> None:
    before = state_of(target.parent / "cladelog.sqlite3")
    f = target.parent / "hostile.in"
    f.write_bytes(payload)
    r = cli(target, "append", str(f))
    assert_one_error(r, 2)
    assert state_of(target.parent / "cladelog.sqlite3") == before


def test_hostile_arguments(target: Path) -> None:
    store = target.parent / "cladelog.sqlite3"
    before = state_of(store)
    cases = [(name, ["--config", str(target), *args], stdin)
             for name, args, stdin in _arg_cases(target.parent)]
    for config in ("x" * 5000, "a\x00b"):  # deployment file names no file system takes
        cases += [(f"--config {config[:8]!r} {c}", ["--config", config, c], None)
                  for c in ("status", "init", "plugins", "verify")]
    for name, args, stdin in cases:
        r = CliRunner().invoke(main, args, input=stdin)
        try:
            assert_one_error(r, 2)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        assert state_of(store) == before, name


@pytest.mark.parametrize("name,text", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_hostile_deployment_file(target: Path, tmp_path: Path, name: str, text: bytes) -> None:
    """A hostile deployment file next to a real log: every command refuses it, in one line."""
    store = target.parent / "cladelog.sqlite3"
    before = state_of(store)
    hostile = tmp_path / "cladelog.toml"
    hostile.write_bytes(text.replace(b'"s.sqlite3"', json.dumps(str(store)).encode()))
    for args in (["append", str(target.parent / "good.json")], ["status"], ["verify"],
                 ["replay"]):
        r = cli(hostile, *args)
        try:
            assert_one_error(r, 2)
        except AssertionError as exc:
            raise AssertionError(f"{name}, {args[0]}: {exc}") from None
    assert state_of(store) == before


def test_the_idempotency_key_as_raw_argv_bytes(target: Path) -> None:
    """``append --idempotency-key $'\\xff'``: the bytes reach Python as a lone surrogate."""
    store = target.parent / "cladelog.sqlite3"
    before = state_of(store)
    exe = Path(sys.executable).with_name("cladelog")
    r = subprocess.run([os.fsencode(exe), b"--config", os.fsencode(target), b"append",
                        b"--idempotency-key", b"\xff", os.fsencode(target.parent / "good.json")],
                       capture_output=True, timeout=60)
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 2 and len(err) == 1, r.stderr
    assert err[0].startswith("error: idempotency_key:"), err
    assert state_of(store) == before


def test_export_to_a_name_that_is_not_utf8(fresh: Path) -> None:
    """A file name of bytes that are not UTF-8 is a file name on Linux: written, and shown."""
    name = fresh.parent / "\udcff.jsonl"
    r = cli(fresh, "export", str(name))
    assert r.exit_code == 0 and "exported 0 event(s)" in r.stdout, r.output
    assert os.path.exists(os.fsencode(name))


def test_meta_when_given_is_an_object(fresh: Path) -> None:
    """``meta`` present but not an object is refused, never taken as "no meta"."""
    for value in ([], 0, False, "", None):
        f = fresh.parent / "m.json"
        f.write_text(json.dumps({**NOTE, "meta": value}), encoding="utf-8")
        line = assert_one_error(cli(fresh, "append", str(f)), 2)
        assert "event.meta: must be an object" in line
    f.write_text(json.dumps({**NOTE, "meta": {}}), encoding="utf-8")  # an empty one is fine
    assert cli(fresh, "append", str(f)).exit_code == 0


# -- import: the corpus and the rules -------------------------------------------------------


def _valid_export(root: Path) -> list[dict[str, Any]]:
    cfg = root / "cladelog.toml"
    assert cli(cfg, "init", "--plugin", "notes").exit_code == 0
    items = [{"stream": s, "type": "notes.note_added", "data": {"text": t}}
             for s, t in (("a", "1"), ("b", "2"), ("a", "3"), ("c", "4"), ("b", "5"))]
    write_jsonl(root / "items.jsonl", items)
    assert cli(cfg, "append", str(root / "items.jsonl")).exit_code == 0
    assert cli(cfg, "append", str(root / "items.jsonl")).exit_code == 0
    r = cli(cfg, "export", "-")
    return [json.loads(line) for line in r.stdout.splitlines()]


_EXPORT_CACHE: dict[str, list[dict[str, Any]]] = {}


def valid_export() -> list[dict[str, Any]]:
    """A valid export (position 1: the plugin record; then 10 notes on streams a, b, c)."""
    if "x" not in _EXPORT_CACHE:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            _EXPORT_CACHE["x"] = _valid_export(Path(tmp))
    return [dict(d) for d in _EXPORT_CACHE["x"]]


def _import_cases() -> list[tuple[str, int, str, Any, str]]:
    """(name, index of the event changed, field, new value, rule the import must name).
    Index 0 is the plugin record; 1.. are notes (stream a: 1, 3, 6, 8; b: 2, 5, 7, 10)."""
    cases: list[tuple[str, int, str, Any, str]] = [
        ("note on core.plugins", 3, "stream", "core.plugins", "reserved"),
        ("plugin record on another stream", 0, "stream", "plugins", "reserved"),
        ("core type on a stream", 3, "type", "core.plugin_enabled", "reserved"),
        ("core type unknown", 0, "type", "core.plugin_renamed", "reserved"),
        ("plugin record without version", 0, "data", {"name": "notes"}, "data"),
        ("plugin record version a number", 0, "data", {"name": "notes", "version": 1}, "data"),
        ("plugin record meta other plugin", 0, "meta",
         {"actor": "x", "plugin": "notes", "plugin_version": "0.1.0"}, "meta"),
        ("gap in a stream", 3, "stream_version", 3, "stream_version"),
        ("stream starts at 5", 4, "stream_version", 5, "stream_version"),
        ("stream version repeated", 3, "stream_version", 1, "stream_version"),
        ("type not a name", 3, "type", "Notes", "type"),
        ("type of another namespace", 3, "type", "other.thing", "meta"),
        ("meta empty", 3, "meta", {}, "meta"),
        ("meta other plugin", 3, "meta",
         {"actor": "x", "plugin": "other", "plugin_version": "0.1.0"}, "meta"),
        ("meta plugin version never enabled", 3, "meta",
         {"actor": "x", "plugin": "notes", "plugin_version": "9.9.9"}, "meta"),
        ("meta plugin version a number", 3, "meta",
         {"actor": "x", "plugin": "notes", "plugin_version": 1}, "meta"),
        ("meta without actor", 3, "meta", {"plugin": "notes", "plugin_version": "0.1.0"},
         "meta"),
        ("meta actor empty", 3, "meta",
         {"actor": "", "plugin": "notes", "plugin_version": "0.1.0"}, "meta"),
        ("meta correlation id a number", 3, "meta",
         {"actor": "x", "plugin": "notes", "plugin_version": "0.1.0", "correlation_id": 5},
         "meta"),
        ("data wrong type", 3, "data", {"text": 5, "tags": []}, "data"),
        ("data extra field", 3, "data", {"text": "a", "tags": [], "x": 1}, "data"),
        ("schema version newer", 3, "schema_version", 3, "data"),
    ]
    for c in CONTROL:
        cases.append((f"stream with U+{ord(c):04X}", 3, "stream", f"a{c}", "stream"))
    cases.append(("stream 201 chars", 3, "stream", "s" * 201, "stream"))
    for t in ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000+00:00",
              "2026-01-01 00:00:00.000000Z", "2026-13-01T00:00:00.000000Z",
              "2026-02-30T00:00:00.000000Z", "2026-01-01T24:00:00.000000Z",
              "2026-1-01T00:00:00.0000000Z", "2026-01-01T00:00:00.000000z", "",
              "yesterday", "\u0662026-01-01T00:00:00.000000Z", "+2026-01-01T00:00:00.00000Z"):
        cases.append((f"recorded_at {t!r}", 3, "recorded_at", t, "recorded_at"))
    return cases


IMPORT_CASES = _import_cases()


#: lines an import refuses before any rule: (name, field, value, fragment of the error)
MALFORMED_LINES: list[tuple[str, str, Any, str]] = [
    ("data number beyond 2**53", "data", {"text": "a", "tags": [], "n": 10**30},
     "data.n: integer"),
    ("data lone surrogate", "data", {"text": "a\ud800", "tags": []}, "lone surrogate"),
    ("meta number beyond 2**53", "meta", {**{"actor": "x", "plugin": "notes",
                                            "plugin_version": "0.1.0"}, "n": -(10**20)},
     "meta.n: integer"),
    ("position 0", "position", 0, "position: must be a positive integer"),
    ("stream_version a string", "stream_version", "2", "stream_version: must be a positive"),
    ("schema_version a float", "schema_version", 2.0, "schema_version: must be a positive"),
    ("meta a list", "meta", [], "meta: must be an object"),
    ("stream a number", "stream", 5, "stream: must be a string"),
    ("hash a number", "hash", 5, "hash: must be a string"),
    ("unknown field", "bogus", 1, "unknown field(s) ['bogus']"),
]


@pytest.mark.parametrize("name,field,value,fragment", MALFORMED_LINES,
                         ids=[c[0] for c in MALFORMED_LINES])
def test_a_malformed_import_line_is_named(fresh: Path, name: str, field: str, value: Any,
                                          fragment: str) -> None:
    docs = valid_export()
    docs[3][field] = value
    f = fresh.parent / "in.jsonl"
    f.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    line = assert_one_error(cli(fresh, "import", str(f)), 2)
    assert "in.jsonl:4" in line and fragment in line, line
    assert state_of(fresh.parent / "cladelog.sqlite3") == (0, GENESIS)


@pytest.mark.parametrize("name,index,field,value,rule", IMPORT_CASES,
                         ids=[c[0] for c in IMPORT_CASES])
def test_hostile_import_names_the_line_and_the_rule(fresh: Path, name: str, index: int,
                                                    field: str, value: Any, rule: str) -> None:
    docs = valid_export()
    docs[index][field] = value
    f = write_jsonl(fresh.parent / "in.jsonl", rehash(docs))
    store = fresh.parent / "cladelog.sqlite3"
    before = state_of(store)
    line = assert_one_error(cli(fresh, "import", str(f)), 2)
    assert f"in.jsonl:{index + 1}: event at position {index + 1} " in line, line
    assert f"(rule {rule})" in line, line
    assert state_of(store) == before


def test_the_unchanged_export_imports(fresh: Path) -> None:
    docs = valid_export()
    f = write_jsonl(fresh.parent / "in.jsonl", rehash(docs))  # rehashing changes nothing
    assert [d["hash"] for d in rehash(docs)] == [d["hash"] for d in docs]
    r = cli(fresh, "import", str(f))
    assert r.exit_code == 0, r.output
    assert cli(fresh, "verify").exit_code == 0


def test_unknown_types_and_older_schema_versions_are_imported(fresh: Path) -> None:
    """What logs written by older or other plugins hold is kept, as append would not write
    it today: a type no enabled plugin registers, an older schema version (upcast when
    read; here notes v1, ``{"text"}``)."""
    docs = valid_export()
    docs[3]["type"] = "notes.retired_event"
    docs[4]["schema_version"], docs[4]["data"] = 1, {"text": "old"}
    f = write_jsonl(fresh.parent / "in.jsonl", rehash(docs))
    r = cli(fresh, "import", str(f))
    assert r.exit_code == 0, r.output
    assert cli(fresh, "verify").exit_code == 0
    r = cli(fresh, "replay", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["skipped_unknown"] == {
        "notes.retired_event": 1}


def test_an_import_refused_part_way_imports_nothing(fresh: Path) -> None:
    """The bad event is the last one: the ten before it are not kept either."""
    docs = valid_export()
    docs[-1]["stream"] = "x\x00"
    f = write_jsonl(fresh.parent / "in.jsonl", rehash(docs))
    line = assert_one_error(cli(fresh, "import", str(f)), 2)
    assert f"in.jsonl:{len(docs)}:" in line and "(rule stream)" in line
    assert state_of(fresh.parent / "cladelog.sqlite3") == (0, GENESIS)


def test_import_continues_the_stream_versions_of_the_store(fresh: Path) -> None:
    """A store holding a prefix: the import's new events continue its streams."""
    docs = valid_export()
    assert cli(fresh, "import", str(write_jsonl(fresh.parent / "p.jsonl", docs[:4]))
               ).exit_code == 0
    docs[5]["stream_version"] = 4  # stream b is at 1 in the store (position 3)
    line = assert_one_error(cli(fresh, "import",
                                str(write_jsonl(fresh.parent / "in.jsonl", rehash(docs)))), 2)
    assert "in.jsonl:6:" in line and "stream 'b' is at version 1" in line, line
    assert state_of(fresh.parent / "cladelog.sqlite3")[0] == 4


# -- the import property --------------------------------------------------------------------


def append_refuses(prefix: list[dict[str, Any]], changed: dict[str, Any], root: Path) -> bool:
    """Would ``append`` refuse to write ``changed`` after ``prefix``? Asked of a real
    append, into a scratch deployment holding the prefix (its recorded_at, which an append
    takes from its clock, is checked against the documented form)."""
    from cladelog.core import CladelogError, Deployment, DeploymentConfig, NewEvent
    from cladelog.core.store.base import event_from_json

    t = changed["recorded_at"]
    if not isinstance(t, str) or not TIME_FORM.fullmatch(t):
        return True
    try:
        datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return True
    sv = changed["stream_version"]
    if type(sv) is not int or sv < 1:
        return True
    type_, data, version = changed["type"], changed["data"], changed["schema_version"]
    if isinstance(type_, str) and type_.startswith("notes.") and type_ != "notes.note_added":
        # a type no enabled plugin registers: what an import keeps (a plugin's retired or
        # newer type), if it is a type name in notes' namespace (meta names notes)
        return re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+", type_) is None
    if type_ == "notes.note_added" and type(version) is int and 1 <= version < 2:
        # an older schema version: an append today writes the same note in version 2
        from cladelog_notes.events import NOTE_ADDED

        try:
            data, version = NOTE_ADDED.upcasters[1](data), None
        except (KeyError, TypeError):
            return True
    shutil.rmtree(root, ignore_errors=True)
    cfg = DeploymentConfig.from_dict({"store": "s.sqlite3", "plugins": ["notes"]},
                                     path=root / "cladelog.toml")
    with Deployment(cfg, create=True) as dep:
        dep.store.import_events(event_from_json(d) for d in prefix)
        try:
            dep.append([NewEvent(changed["stream"], type_, data, changed["meta"], version)],
                       expected_versions={changed["stream"]: sv - 1})
        except CladelogError:
            return True
        except (TypeError, AttributeError):  # not even an event (a stream that is a list)
            return True
    return False


json_leaf = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=6)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                          max_leaves=6)
META = {"actor": "root", "plugin": "notes", "plugin_version": "0.1.0"}
FIELD_VALUES = {
    "stream": st.sampled_from(["a", "b", "c", "d", "core.plugins", "", "s" * 201, "a\x1b",
                               "a\x00", "a\u2028", "\x7f"]) | st.text(max_size=8),
    "stream_version": st.integers(-1, 7),
    "type": st.sampled_from(["notes.note_added", "notes.bogus", "core.plugin_enabled",
                             "core.plugin_disabled", "core.x", "other.thing", "notes", "",
                             "Notes.note_added", "notes.note_added.v2"]),
    "schema_version": st.integers(0, 4),
    "data": st.one_of(
        json_value,
        st.fixed_dictionaries({"text": json_value, "tags": json_value}),
        st.fixed_dictionaries({"text": st.text(max_size=4)},
                              optional={"tags": st.lists(st.text(max_size=3), max_size=2),
                                        "x": json_leaf})),
    "meta": st.one_of(
        json_value,
        st.fixed_dictionaries({}, optional={k: st.just(v) | json_leaf
                                            for k, v in META.items()}),
        st.fixed_dictionaries({k: st.just(v) for k, v in META.items()},
                              optional={"correlation_id": json_leaf, "x": json_leaf})),
    "recorded_at": st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000001Z",
                                    "2026-02-29T00:00:00.000000Z",
                                    "2028-02-29T23:59:59.999999Z",
                                    "2026-01-01T00:00:00.000000+00:00"])
    | st.text(max_size=30),
}


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(index=st.integers(1, 10), change=st.sampled_from(sorted(FIELD_VALUES)).flatmap(
    lambda f: st.tuples(st.just(f), FIELD_VALUES[f])))
def test_import_refuses_what_append_refuses(tmp_path: Path, index: int,
                                            change: tuple[str, Any]) -> None:
    from cladelog.core import Deployment, DeploymentConfig, InputError
    from cladelog.core.errors import ChainError
    from cladelog.core.store.base import event_from_json

    field, value = change
    docs = valid_export()
    if docs[index][field] == value:
        return  # no change
    docs[index][field] = value
    try:
        docs = rehash(docs)
    except (ValueError, TypeError):  # a value JSON cannot carry (a lone surrogate)
        return
    refused_by_append = append_refuses(docs[:index], docs[index], tmp_path / "oracle")
    event(f"{field}: append {'refuses' if refused_by_append else 'accepts'}")
    root = tmp_path / "import"
    shutil.rmtree(root, ignore_errors=True)
    cfg = DeploymentConfig.from_dict({"store": "s.sqlite3", "plugins": ["notes"]},
                                     path=root / "cladelog.toml")
    with Deployment(cfg, create=True) as dep:
        try:
            dep.import_events(event_from_json(d) for d in docs)
            refused_by_import = False
        except InputError:
            refused_by_import = True
        except ChainError as exc:  # a rehashed export always links
            raise AssertionError(f"the chain was refused: {exc}") from None
        if refused_by_import:
            assert dep.store.head().position == 0  # nothing imported
    if refused_by_append:
        assert refused_by_import, (field, value)


# -- logs that already hold such events -----------------------------------------------------


def _bad_log(cfg: Path) -> list[tuple[int, set[str]]]:
    """Write, straight into the store (as an older cladelog or a hand could), events that
    break rules; return each bad position with the rules it breaks."""
    from cladelog.core.store import open_store
    from cladelog.core.store.base import event_from_json

    docs = valid_export()
    bad: list[tuple[int, set[str]]] = []

    def add(doc: dict[str, Any], rules: set[str]) -> None:
        doc = {**doc, "position": len(docs) + 1}
        docs.append(doc)
        bad.append((doc["position"], rules))

    note = {**docs[-1], "data": {"text": "z", "tags": []}}
    # a plugin record without a version (before: every later append failed with
    # "internal error: KeyError: 'version'"), and a note on the reserved stream
    add({**docs[0], "stream_version": 2, "data": {"name": "notes"}}, {"data"})
    add({**note, "stream": "core.plugins", "stream_version": 3}, {"reserved"})
    add({**note, "stream": "a", "stream_version": 9}, {"stream_version"})  # a gap
    add({**note, "stream": "esc\x1b", "stream_version": 1,
         "recorded_at": "2026-01-01T00:00:00Z"}, {"stream", "recorded_at"})
    add({**note, "stream": "d", "stream_version": 1,
         "meta": {"actor": "x", "plugin": "other", "plugin_version": "1"}}, {"meta"})
    add({**note, "stream": "d", "stream_version": 2, "type": "notes.Bogus"}, {"type"})
    add({**note, "stream": "d", "stream_version": 3, "data": {"text": 5, "tags": []}},
        {"data"})
    with open_store(str(cfg.parent / "cladelog.sqlite3")) as store:
        store.import_events(event_from_json(d) for d in rehash(docs))
    return bad


def test_verify_lists_every_rule_every_event_breaks(fresh: Path) -> None:
    bad = _bad_log(fresh)
    r = cli(fresh, "verify", "--json")
    line = assert_one_error(r, 1)
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["verified_to"] == doc["head"]  # the chain is fine
    found: dict[int, set[str]] = {}
    for v in doc["violations"]:
        found.setdefault(v["position"], set()).add(v["rule"])
        assert f"position {v['position']}" not in v["reason"] or True
    assert found == dict(bad)
    assert line.startswith(f"error: position {bad[0][0]}: ")
    assert f"({sum(len(r) for _, r in bad)} rule violations in all)" in line
    text = cli(fresh, "verify")
    assert_one_error(text, 1)
    for position, rules in bad:  # the text form lists them too, one per line
        for rule in rules:
            assert re.search(rf"^position {position}: .*\(rule {rule}\)$", text.stdout, re.M), \
                (position, rule, text.stdout)


def test_append_and_replay_still_work_on_such_a_log(fresh: Path) -> None:
    _bad_log(fresh)
    f = fresh.parent / "one.json"
    f.write_text(json.dumps(NOTE), encoding="utf-8")
    for _ in range(2):  # the second append reads the plugin record the first one wrote
        r = cli(fresh, "append", str(f))
        assert r.exit_code == 0, r.output
    for args in (["replay"], ["replay", "--rebuild"], ["status"], ["log"]):
        r = cli(fresh, *args)
        assert r.exit_code == 0, (args, r.output)
    # the record without a version is passed over: notes is still recorded as enabled
    r = cli(fresh, "replay", "--json")
    assert "enabled: notes 0.1.0" in r.stdout


def test_a_clock_that_writes_another_form_is_refused(tmp_path: Path) -> None:
    from cladelog.core import Deployment, DeploymentConfig, InputError, NewEvent

    cfg = DeploymentConfig.from_dict({"store": "s.sqlite3", "plugins": ["notes"]},
                                     path=tmp_path / "cladelog.toml")
    with Deployment(cfg, create=True, clock=lambda: "2026-01-01T00:00:00Z") as dep:
        with pytest.raises(InputError, match=r"clock.recorded_at: must be a UTC time"):
            dep.append([NewEvent("n", "notes.note_added", {"text": "a"})])
        assert dep.store.head().position == 0


# -- 2. the tamper sweep --------------------------------------------------------------------

TARGET = 17  # a note in the middle of the log, in a batch of several


def _tamper(store: Path, kind: str, column: str) -> None:
    db = sqlite3.connect(store, isolation_level=None)
    try:
        for t in ("events_no_update", "events_no_delete"):
            db.execute(f"DROP TRIGGER IF EXISTS {t}")
        p = TARGET
        if kind == "bit flip":
            value = db.execute(f"SELECT {column} FROM events WHERE position = ?",
                               (p,)).fetchone()[0]
            if isinstance(value, int):  # (a flip of a low bit would collide with a row)
                new: Any = value + 1000 if column == "position" else value ^ 1024
            elif isinstance(value, bytes):
                b = bytearray(value)
                b[len(b) // 2] ^= 0x01
                new = bytes(b)
            else:
                s = bytearray(value.encode())
                s[len(s) // 2] ^= 0x01  # ASCII stays ASCII
                new = s.decode()
            db.execute(f"UPDATE events SET {column} = ? WHERE position = ?", (new, p))
        elif kind == "storage type":
            # the same bytes, another storage class: a BLOB (or TEXT for data and meta)
            cast = "TEXT" if column in ("data", "meta") else "BLOB"
            inner = f"CAST({column} AS TEXT)" if cast == "BLOB" else column
            db.execute(f"UPDATE events SET {column} = CAST({inner} AS {cast}) "
                       "WHERE position = ?", (p,))
        elif kind == "invalid UTF-8":
            if column in ("data", "meta"):
                db.execute(f"UPDATE events SET {column} = {column} || X'FF' WHERE position = ?",
                           (p,))
            else:
                db.execute(f"UPDATE events SET {column} = CAST(CAST({column} AS BLOB) || X'FF' "
                           "AS TEXT) WHERE position = ?", (p,))
        elif kind == "deleted row":
            db.execute("DELETE FROM events WHERE position = ?", (p,))
        elif kind == "swapped rows":
            db.execute("UPDATE events SET position = -1 WHERE position = ?", (p,))
            db.execute("UPDATE events SET position = ? WHERE position = ?", (p, p + 1))
            db.execute("UPDATE events SET position = ? WHERE position = -1", (p + 1,))
        else:
            raise AssertionError(kind)
    finally:
        db.close()


COLUMNS = ("position", "stream", "stream_version", "type", "schema_version", "recorded_at",
           "data", "meta", "hash", "prev_hash")
TEXT = ("stream", "type", "recorded_at", "hash", "prev_hash", "data", "meta")
# (position is the table's INTEGER PRIMARY KEY, SQLite's rowid: it holds only integers, so
# it has no storage type to change; a changed value is its bit flip)
SWEEP = ([("bit flip", c) for c in COLUMNS]
         + [("storage type", c) for c in COLUMNS if c != "position"]
         + [("invalid UTF-8", c) for c in TEXT]
         + [("deleted row", "*"), ("swapped rows", "*")])
# A log cut at its tail (the last rows deleted) verifies as a shorter chain; what proves it
# was longer is the store's own checkpoints, which the harden-store branch checks (its
# test covers that case of the sweep).


@pytest.mark.parametrize("kind,column", SWEEP, ids=[f"{k}-{c}" for k, c in SWEEP])
def test_tamper_sweep(copy_of: Path, kind: str, column: str) -> None:
    store = copy_of.parent / "cladelog.sqlite3"
    count, _ = state_of(store)
    assert count > TARGET + 5
    _tamper(store, kind, column)
    r = cli(copy_of, "verify", "--json")
    line = assert_one_error(r, 1)
    doc = json.loads(r.stdout)
    assert doc["position"] == TARGET and doc["verified_to"] == TARGET - 1, doc
    assert line.startswith(f"error: position {TARGET}: ")
    if kind == "invalid UTF-8" and column not in ("data", "meta"):
        assert f"column {column!r}" in line, line
    if column == "prev_hash":
        return  # replay links each body to the hash before it, not to this column
    r = cli(copy_of, "replay", "--rebuild")
    line = assert_one_error(r, 1)
    assert line.startswith(f"error: position {TARGET}: "), line


def test_the_issue_s_invalid_utf8_reproduction(copy_of: Path) -> None:
    """``UPDATE events SET type=CAST(CAST(type AS BLOB)||X'FF' AS TEXT) WHERE position=37``:
    verify and replay --rebuild name position 37 and the column, not a projection."""
    store = copy_of.parent / "cladelog.sqlite3"
    db = sqlite3.connect(store, isolation_level=None)
    db.execute("DROP TRIGGER events_no_update")
    db.execute("UPDATE events SET type=CAST(CAST(type AS BLOB)||X'FF' AS TEXT) "
               "WHERE position=37")
    db.close()
    for args in (["verify"], ["replay", "--rebuild"], ["log"], ["export", "-"]):
        line = assert_one_error(cli(copy_of, *args), 1)
        assert line == ("error: position 37: column 'type' holds text that is not valid UTF-8 "
                        "(the store file is damaged)"), (args, line)


@pytest.mark.parametrize("damage", ["malformed page", "missing events", "renamed events",
                                    "not a database"])
def test_a_damaged_store_file_is_named(copy_of: Path, damage: str) -> None:
    store = copy_of.parent / "cladelog.sqlite3"
    db = sqlite3.connect(store, isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if damage == "missing events":
        db.execute("DROP TABLE events")
    elif damage == "renamed events":
        db.execute("ALTER TABLE events RENAME TO events_old")
    db.close()
    if damage == "malformed page":
        raw = store.read_bytes()  # the page holding a note's data: a leaf of events
        page = raw.index(b"note 5.2") // 4096
        with open(store, "r+b") as fh:
            fh.seek(4096 * page)
            fh.write(b"\x13" * 4096)
    elif damage == "not a database":
        with open(store, "r+b") as fh:
            fh.write(b"garbage" * 20)
    commands = [["verify"], ["replay", "--rebuild"], ["log"], ["export", "-"]]
    if damage != "malformed page":  # these read no page of the events' rows
        commands += [["status"], ["append", "-"]]
    for args in commands:
        r = cli(copy_of, *args, input=json.dumps(NOTE))
        line = assert_one_error(r, 2)
        assert "damaged" in line and str(store) in line, (args, line)
