"""cladelog.core.strictjson: the one strict JSON reader every package calls."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import InputError
from cladelog.core.strictjson import (
    JSONInputError,
    loads_strict,
    read_json_file,
    read_lines,
    read_text,
    shown_name,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": [1, 2.5, "x", true, null]}', {"a": [1, 2.5, "x", True, None]}),
        ("1.7976931348623157e308", 1.7976931348623157e308),  # the largest double is fine
        ("12345678901234567890123", 12345678901234567890123),  # integers are read exactly
        ('"\\u00e9"', "\u00e9"),
        ("[]", []),
    ],
)
def test_valid_json_is_read_as_the_standard_library_reads_it(text: str, value: Any) -> None:
    assert loads_strict(text, "t") == value
    assert loads_strict(text.encode("utf-8"), "t") == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1, "a": 2}', "duplicate member 'a'"),
        ('{"x": {"b": 1, "c": 2, "b": 3}}', "duplicate member 'b'"),
        ("[NaN]", "NaN is not valid JSON"),
        ("Infinity", "Infinity is not valid JSON"),
        ("-Infinity", "-Infinity is not valid JSON"),
        ("1e999", "number 1e999 is out of range for a double"),
        ("-1e400", "number -1e400 is out of range for a double"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_what_strict_reading_refuses(text: str, reason: str) -> None:
    with pytest.raises(JSONInputError) as info:
        loads_strict(text, "doc.json")
    assert info.value.reason == reason
    assert str(info.value) == f"doc.json: invalid JSON ({reason})"
    assert info.value.where == "doc.json"
    assert isinstance(info.value, InputError)  # the CLI exits 2 on it


@pytest.mark.parametrize("text", ["", "{", '{"a" 1}', "[1,]", "01", "'a'", "1 2"])
def test_syntax_errors_are_one_line(text: str) -> None:
    with pytest.raises(JSONInputError) as info:
        loads_strict(text, "t")
    assert str(info.value).startswith("t: invalid JSON (")
    assert "\n" not in str(info.value)


def test_an_integer_too_long_to_convert_is_one_line() -> None:
    with pytest.raises(JSONInputError) as info:
        loads_strict("1" * 5000, "t")
    assert str(info.value).startswith("t: invalid JSON (")
    assert "\n" not in str(info.value)


def test_bytes_must_be_utf8() -> None:
    with pytest.raises(JSONInputError, match=r"^p: invalid JSON \(not valid UTF-8 \(byte 1\)\)$"):
        loads_strict(b'"\xff"', "p")
    with pytest.raises(JSONInputError, match="not valid UTF-8"):
        loads_strict('{"a":1}'.encode("utf-16"), "p")


def test_a_file_is_read_strictly(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('{"a": 1, "a": 1}', encoding="utf-8")
    with pytest.raises(JSONInputError) as info:
        read_json_file(path)
    assert str(info.value) == f"{path}: invalid JSON (duplicate member 'a')"
    path.write_text('{"a": 1}', encoding="utf-8")
    assert read_json_file(str(path)) == {"a": 1}


def test_a_leading_byte_order_mark_is_skipped_in_files(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json_file(path) == {"a": 1}
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n{"b": 2}\n')
    assert [line for _, line in read_lines(path)] == ['{"a": 1}\n', '{"b": 2}\n']


def test_stdin_is_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b'[1, 2]\n'))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert read_json_file("-") == [1, 2]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda d: d / "absent.json", "cannot read (No such file or directory)"),
        (lambda d: d, "cannot read (Is a directory)"),
    ],
)
def test_unreadable_files_are_named(tmp_path: Path, make: Any, problem: str) -> None:
    path = make(tmp_path)
    with pytest.raises(JSONInputError) as info:
        read_json_file(path)
    assert str(info.value) == f"{path}: {problem}"
    assert info.value.reason is None


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"a": "\xe9"}')
    with pytest.raises(JSONInputError) as info:
        read_text(path)
    assert str(info.value) == f"{path}: not valid UTF-8 (byte 7)"
    path.write_bytes(b'{"a": 1}\n{"b": "\xe9"}\n')
    with pytest.raises(JSONInputError) as info:
        list(read_lines(path))
    assert str(info.value) == f"{path}:2: not valid UTF-8 (byte 7)"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (None, "path: must be a file path, got NoneType"),
        (3, "path: must be a file path, got int"),
        ("w\x00.json", "w\\x00.json: cannot read (not a valid file name)"),
    ],
)
def test_bad_paths(path: Any, message: str) -> None:
    with pytest.raises(JSONInputError) as info:
        read_json_file(path)
    assert str(info.value) == message


def test_a_file_name_with_a_control_character_stays_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "we\nird.json"
    with pytest.raises(JSONInputError) as info:
        read_json_file(path)
    assert str(info.value).endswith("we\\nird.json: cannot read (No such file or directory)")
    assert shown_name("plain.json") == "plain.json"
