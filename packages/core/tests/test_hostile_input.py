"""Hostile input: a clear one-line error, exit 2, and the log unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.cli import main
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NOTE = {"stream": "n", "type": "notes.note_added", "data": {"text": "a"}}


@pytest.fixture(scope="module")
def deployment_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    r = CliRunner().invoke(main, ["--config", str(root / "cladelog.toml"), "init",
                                  "--plugin", "notes"])
    assert r.exit_code == 0, r.output
    return root


def append_bytes(root: Path, payload: bytes) -> Any:
    f = root / "input.jsonl"
    f.write_bytes(payload)
    return CliRunner().invoke(main, ["--config", str(root / "cladelog.toml"), "append", str(f)])


def head(root: Path) -> str:
    r = CliRunner().invoke(main, ["--config", str(root / "cladelog.toml"), "status", "--json"])
    return json.loads(r.output)["head"]["hash"]  # type: ignore[no-any-return]


def assert_refused(root: Path, payload: bytes, fragment: str) -> None:
    before = head(root)
    r = append_bytes(root, payload)
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in r.output
    assert head(root) == before


def doc(**over: Any) -> bytes:
    return json.dumps({**NOTE, **over}).encode()


@pytest.mark.parametrize("payload,fragment", [
    (b'{"stream": "n", "type": ', "invalid JSON"),
    (b'{"stream": "n", "type": "notes.note_added", "data": {"text": NaN}}', "NaN is not valid"),
    (b'{"stream": "n", "type": "notes.note_added", "data": {"text": Infinity}}',
     "Infinity is not valid"),
    (doc(data={"text": 5}), "data.text: invalid value for type, expected str"),
    (doc(data={"text": "a", "tags": "x"}), "data.tags: invalid value for type, expected list"),
    (doc(data={"text": "a", "extra": 1}), "extra fields found (extra)"),
    (doc(data={"text": "a", "tags": [10**30]}), "data.tags"),
    (doc(type="nobody.registers_this"), "unknown event type 'nobody.registers_this'"),
    (doc(schema_version=99), "has no version 99"),
    (doc(schema_version=1), "written in version 2, not 1"),
    (doc(stream=""), "stream: must be a non-empty string"),
    (doc(stream=7), "stream: required string"),
    (doc(meta={"actor": float("nan")}).replace(b"NaN", b"NaN"), "NaN is not valid"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"stream": "n", "type": "notes.note_added", "data": {"text": "\xff\xfe"}}',
     "not valid UTF-8"),
    (b"", "no events"),
    (b"[]", "no events"),
    (b"42", "expected an object"),
    (doc(expected_version=-1), "expected_version: must be an integer >= 0"),
    (doc(bogus=1), "unknown field(s) ['bogus']"),
    (b'{"stream": "n", "type": "notes.note_added", "data": {"text": "a", "tags": [' +
     b'"x"]}}\n{"stream": "n", "type": "notes.note_added", "data": {"text": 1}}',
     "events[1].data.text"),
])
def test_each_hostile_input_is_refused(deployment_dir: Path, payload: bytes, fragment: str
                                       ) -> None:
    assert_refused(deployment_dir, payload, fragment)


def test_deep_payload_is_refused_with_a_path(deployment_dir: Path) -> None:
    deep: Any = "x"
    for _ in range(70):
        deep = [deep]
    assert_refused(deployment_dir, doc(data={"text": "a", "tags": deep}), "data.tags")


def test_a_missing_file_is_exit_2(deployment_dir: Path) -> None:
    r = CliRunner().invoke(main, ["--config", str(deployment_dir / "cladelog.toml"), "append",
                                  str(deployment_dir / "missing.json")])
    assert r.exit_code == 2 and "cannot read" in r.output


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_random_bytes_never_crash_or_append(deployment_dir: Path, payload: bytes) -> None:
    before = head(deployment_dir)
    r = append_bytes(deployment_dir, payload)
    assert r.exit_code in (0, 2)
    assert "Traceback" not in r.output and "internal error" not in r.output
    if r.exit_code == 2:
        assert head(deployment_dir) == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=12,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(stream=json_values, type_=json_values, data=json_values)
def test_random_json_items_are_validated(deployment_dir: Path, stream: Any, type_: Any,
                                         data: Any) -> None:
    before = head(deployment_dir)
    item = {"stream": stream, "type": type_, "data": data}
    r = append_bytes(deployment_dir, json.dumps(item).encode())
    assert "Traceback" not in r.output and "internal error" not in r.output
    if r.exit_code != 0:
        assert r.exit_code == 2
        assert head(deployment_dir) == before
