"""Strict JSON file reading for the CLI and the weights loader (the only I/O here).

Strict means: UTF-8 text, one JSON value, no ``NaN``/``Infinity`` literals, no
number that overflows a double, no duplicate member names, and no nesting so
deep that the parser would recurse out of stack. Every failure raises
:class:`~cladelog.fork_score.errors.JsonFileError` with the message
``<file>: <problem>`` on one line.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from cladelog.fork_score.errors import JsonFileError

__all__ = ["battery_result_schema", "load_json_file", "loads_strict"]


class _Refused(Exception):
    """Internal signal from the parser hooks; turned into JsonFileError."""


def _reject_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:40]} overflows a double")
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate member name {key[:40]!r}")
        out[key] = value
    return out


def loads_strict(text: str, source: str) -> Any:
    """Parse ``text`` strictly; ``source`` names it in error messages."""
    try:
        return json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_parse_float,
            object_pairs_hook=_unique_object,
        )
    except _Refused as exc:
        raise JsonFileError(f"{source}: invalid JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise JsonFileError(
            f"{source}: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise JsonFileError(f"{source}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal too long to convert
        raise JsonFileError(f"{source}: invalid JSON: {str(exc).splitlines()[0]}") from None


def load_json_file(path: str | Path) -> Any:
    """Read and strictly parse the JSON file at ``path``."""
    if not isinstance(path, str | os.PathLike):
        raise JsonFileError(f"path: must be a file path, got {type(path).__name__}")
    source = _shown(str(path))
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise JsonFileError(f"{source}: cannot read: {reason}") from None
    except (TypeError, ValueError):  # an embedded NUL byte, a bytes path...
        raise JsonFileError(f"{source}: cannot read: not a valid file name") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise JsonFileError(f"{source}: invalid JSON: not UTF-8 text") from None
    return loads_strict(text, source)


def _shown(source: str) -> str:
    """A file name as it may appear in a one-line message (no control characters)."""
    if source.isprintable():
        return source
    return source.encode("unicode_escape", "backslashreplace").decode("ascii")


def battery_result_schema() -> Any:
    """The JSON Schema of the battery-result form, as shipped in the package."""
    from importlib.resources import files

    resource = files("cladelog.fork_score").joinpath("schema", "battery-result.schema.json")
    return loads_strict(resource.read_text(encoding="utf-8"), "battery-result.schema.json")
