"""A large ``append`` is validated and written in chunks, in one transaction.

Issue 18: appending a 200,000-event file held every event several times over (about 25x the
file). Now one chunk is alive at a time (benchmarks/bench_append_memory.py measures the peak);
these tests pin that the chunks are written as they are read, and that the batch is still
one atomic, idempotent batch.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import cli

CHUNK = 50


@pytest.fixture
def run(cli: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    from cladelog.core import cli as cli_module

    monkeypatch.setattr(cli_module, "APPEND_CHUNK_EVENTS", CHUNK)
    assert cli("init", "--plugin", "notes").exit_code == 0
    return cli


def _note(i: int, **extra: Any) -> str:
    return json.dumps({"stream": f"nb-{i % 3}", "type": "notes.note_added",
                       "data": {"text": f"note {i}", "tags": [f"t{i % 2}"]}, **extra})


def _file(tmp_path: Path, lines: list[str], name: str = "big.jsonl") -> str:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _rows(tmp_path: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(tmp_path / "cladelog.sqlite3")
    try:
        return db.execute("SELECT position, stream, stream_version, type, recorded_at "
                          "FROM events ORDER BY position").fetchall()
    finally:
        db.close()


def test_chunks_are_written_as_they_are_read(run: Any, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """At no point are more than two chunks' events read ahead of what the store holds
    (the store's own connection sees the rows it has not committed yet)."""
    from cladelog.core.store.sqlite import SQLiteStore

    path = _file(tmp_path, [_note(i) for i in range(430)])
    parsed = {"n": 0}
    seen: list[tuple[int, int]] = []  # (items parsed so far, rows written so far)
    parse = cli.parse_json_text

    def counting_parse(text: str, where: str) -> Any:
        parsed["n"] += 1
        return parse(text, where)

    monkeypatch.setattr(cli, "parse_json_text", counting_parse)
    real_write = SQLiteStore.append_chunks

    def watched(self: Any, chunks: Any, **kw: Any) -> Any:
        def watching() -> Any:
            for chunk in chunks:
                written = self._db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
                seen.append((parsed["n"], int(written)))
                yield chunk

        return real_write(self, watching(), **kw)

    monkeypatch.setattr(SQLiteStore, "append_chunks", watched)
    r = run("append", path)
    assert r.exit_code == 0, r.output
    # 1 plugin enablement, then the 430 notes: one batch, in order
    assert r.output.strip() == "appended 430 event(s), positions 2..431"
    assert len(seen) == 9  # ceil(430 / 50) chunks
    # the first two chunks are read before the store is locked (an input of one chunk is
    # validated in full first); from then on one chunk is read, then written
    assert all(n - max(rows - 1, 0) <= 2 * CHUNK for n, rows in seen), seen
    assert seen[-1][1] == 1 + 8 * CHUNK  # the rows before the last chunk were written
    rows = _rows(tmp_path)
    assert [r[0] for r in rows] == list(range(1, 432))
    assert len({r[4] for r in rows[1:]}) == 1  # one batch: one recorded_at
    assert [r[2] for r in rows if r[1] == "nb-0"] == list(range(1, 145))
    assert run("verify").exit_code == 0


@pytest.mark.parametrize("bad_at", [3, 260, 429])
def test_a_bad_event_anywhere_appends_nothing(run: Any, tmp_path: Path, bad_at: int) -> None:
    lines = [_note(i) for i in range(430)]
    lines[bad_at] = json.dumps({"stream": "s", "type": "notes.note_added",
                                "data": {"text": 5, "tags": []}})
    r = run("append", _file(tmp_path, lines))
    assert r.exit_code == 2
    (line,) = r.output.splitlines()
    assert line.startswith(f"error: events[{bad_at}].data.text")
    assert _rows(tmp_path) == []  # not even the plugin enablement that goes first
    lines[bad_at] = "{not json"
    r = run("append", _file(tmp_path, lines))
    assert r.exit_code == 2 and f"big.jsonl:{bad_at + 1}: invalid JSON" in r.output
    assert _rows(tmp_path) == []


def test_a_large_batch_under_a_key_is_appended_once(run: Any, tmp_path: Path) -> None:
    path = _file(tmp_path, [_note(i) for i in range(200)])
    first = run("append", "--idempotency-key", "big-1", path)
    assert first.exit_code == 0 and "positions 2..201" in first.output
    again = run("append", "--idempotency-key", "big-1", path)
    assert again.exit_code == 0 and again.output == first.output
    assert len(_rows(tmp_path)) == 201
    other = run("append", "--idempotency-key", "big-1",
                _file(tmp_path, [_note(i) for i in range(199)], "other.jsonl"))
    assert other.exit_code == 2 and "was used for a different batch" in other.output
    # the record's digest is the digest of the batch at once: a retry through stdin as one
    # JSON array (validated whole, appended at once) finds it
    doc = "[" + ",".join(_note(i) for i in range(200)) + "]"
    monkeyed = run("append", "--idempotency-key", "big-1", "-", input=doc)
    assert monkeyed.exit_code == 0 and "positions 2..201" in monkeyed.output
    assert len(_rows(tmp_path)) == 201
    assert run("verify").exit_code == 0


def test_expected_versions_span_the_chunks(run: Any, tmp_path: Path) -> None:
    """An expected version is the stream's version before the batch, wherever the file
    names it."""
    lines = [_note(i) for i in range(120)]
    lines[110] = _note(110, expected_version=0)  # nb-2 had no event before this batch
    assert run("append", _file(tmp_path, lines)).exit_code == 0
    lines[110] = _note(110, expected_version=0)  # now it has 40
    r = run("append", _file(tmp_path, lines))
    assert r.exit_code == 2
    assert "stream 'nb-2': expected version 0, but it is at 40" in r.output
    lines[5] = _note(5, expected_version=40)  # nb-2: right, in the first chunk
    lines[110] = _note(110, expected_version=39)  # nb-2 again, another version
    r = run("append", _file(tmp_path, lines))
    assert r.exit_code == 2 and "events[110].expected_version: conflicts" in r.output
    assert len(_rows(tmp_path)) == 121


def test_stdin_is_read_in_chunks_too(run: Any, tmp_path: Path) -> None:
    text = "\n".join(_note(i) for i in range(130)) + "\n"
    r = run("append", "-", input=text)
    assert r.exit_code == 0 and "appended 130 event(s), positions 2..131" in r.output
