"""Private helpers that read and check single JSON fields, naming their path on error."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from typing import Any

from cladelog.lawv.errors import LawVInputError

__all__ = [
    "ELO_LIMIT",
    "MAX_COUNT",
    "check_keys",
    "fail",
    "opt_number",
    "req_bool",
    "req_date",
    "req_int",
    "req_list",
    "req_mapping",
    "req_number",
    "req_string",
]

#: Largest magnitude accepted for any Elo-valued number (ratings, differences,
#: uncertainties, T, bands). It keeps every square and sum far from overflow.
ELO_LIMIT = 1e6

#: Largest integer accepted (the I-JSON safe range).
MAX_COUNT = 2**53 - 1

_MAX_SHOWN = 60
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _show(value: Any) -> str:
    """A short, safe rendering of a bad value for an error message."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    text = text.replace("\n", " ")
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 3] + "..."
    return text


def fail(path: str, problem: str, value: Any = ...) -> LawVInputError:
    """Build the error for ``path``; appends ``got <value>`` when a value is given."""
    if value is ...:
        return LawVInputError(f"{path}: {problem}")
    return LawVInputError(f"{path}: {problem}, got {_show(value)}")


def req_mapping(value: Any, path: str) -> Mapping[str, Any]:
    """``value`` must be a JSON object (a mapping with string keys)."""
    if not isinstance(value, Mapping):
        raise fail(path, "must be an object", value)
    for key in value:
        if not isinstance(key, str):
            raise fail(path, "object keys must be strings", key)
    return value


def check_keys(
    obj: Mapping[str, Any], path: str, required: frozenset[str], optional: frozenset[str]
) -> None:
    """Refuse missing required keys and (strict forms) keys outside ``required | optional``."""
    for key in sorted(required):
        if key not in obj:
            raise fail(f"{path}.{key}", "is required")
    for key in sorted(obj):
        if key not in required and key not in optional:
            raise fail(f"{path}.{key}", "is not a known field")


def req_list(value: Any, path: str) -> list[Any]:
    """``value`` must be a JSON array (list or tuple)."""
    if not isinstance(value, list | tuple):
        raise fail(path, "must be an array", value)
    return list(value)


def req_string(value: Any, path: str) -> str:
    """``value`` must be a non-empty string."""
    if not isinstance(value, str) or not value:
        raise fail(path, "must be a non-empty string", value)
    return str(value)


def req_bool(value: Any, path: str) -> bool:
    """``value`` must be ``true`` or ``false``."""
    if not isinstance(value, bool):
        raise fail(path, "must be true or false", value)
    return value


def req_int(value: Any, path: str, *, low: int = 0, high: int = MAX_COUNT) -> int:
    """``value`` must be an integer (not a bool) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(path, f"must be an integer in [{low}, {high}]", value)
    if not low <= value <= high:
        raise fail(path, f"must be an integer in [{low}, {high}]", value)
    return int(value)


def req_number(value: Any, path: str, *, low: float | None = None) -> float:
    """``value`` must be a finite number with ``|value| <= ELO_LIMIT`` (and ``>= low``)."""
    rule = "a finite number" if low is None else f"a finite number >= {low:g}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(path, f"must be {rule}", value)
    try:
        number = float(value)
    except OverflowError:
        raise fail(path, f"must be {rule}", value) from None
    if not math.isfinite(number):
        raise fail(path, f"must be {rule}", value)
    if low is not None and number < low:
        raise fail(path, f"must be {rule}", value)
    if abs(number) > ELO_LIMIT:
        raise fail(path, f"must have magnitude <= {ELO_LIMIT:g}", value)
    return number


def opt_number(
    obj: Mapping[str, Any], key: str, path: str, *, low: float | None = None
) -> float | None:
    """Read an optional number; an absent key or ``null`` gives None."""
    value = obj.get(key)
    if value is None:
        return None
    return req_number(value, f"{path}.{key}", low=low)


def req_date(value: Any, path: str) -> str:
    """``value`` must be a calendar date written ``YYYY-MM-DD``."""
    if not isinstance(value, str) or _DATE.fullmatch(value) is None:
        raise fail(path, "must be a date YYYY-MM-DD", value)
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise fail(path, "must be a date YYYY-MM-DD", value) from None
    return value
