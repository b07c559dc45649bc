"""JSON files for the CLI and the weights loader: core's strict reader, fork-score's error.

What strict means (UTF-8, no ``NaN``/``Infinity``, no number beyond a double, no
duplicate member, no nesting deep enough to exhaust the stack) is
:mod:`cladelog.core.strictjson`'s rule; here a refusal becomes
:class:`~cladelog.fork_score.errors.JsonFileError` (a
:class:`~cladelog.core.JSONInputError` too), with core's one-line message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cladelog.core import JSONInputError, loads_strict, read_json_file
from cladelog.fork_score.errors import JsonFileError

__all__ = ["battery_result_schema", "load_json_file"]


def load_json_file(path: str | Path) -> Any:
    """Read and strictly parse the JSON file at ``path``; raise :class:`JsonFileError`."""
    try:
        return read_json_file(path)
    except JSONInputError as exc:
        raise JsonFileError(exc.where, exc.problem, exc.reason) from None


def battery_result_schema() -> Any:
    """The JSON Schema of the battery-result form, as shipped in the package."""
    from importlib.resources import files

    resource = files("cladelog.fork_score").joinpath("schema", "battery-result.schema.json")
    return loads_strict(resource.read_text(encoding="utf-8"), "battery-result.schema.json")
