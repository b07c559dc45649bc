"""Checks of single fields read from untrusted JSON, each naming the field's path on error.

The common field rules every package applies, written once: a number is finite and
not a bool, an integer lies in the I-JSON safe range ``|n| <= 2**53 - 1``
(:data:`MAX_SAFE_INTEGER`, beyond which a double cannot hold it exactly), an object's
keys are strings, a form has its required members and no unknown ones, and a bad value
is shown in the message briefly and on one line (:func:`shown`).

Every check takes the path of the field (``contract.anchors[2].rating``) and, as
``error``, the exception class to raise (default :class:`~cladelog.core.InputError`;
a plugin passes its own subclass of it). Messages read ``<path>: <problem>[, got
<value>]``. Pure: the standard library and :mod:`cladelog.core.errors` only.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .canonical import MAX_SAFE_INTEGER
from .errors import InputError

__all__ = [
    "MAX_SAFE_INTEGER",
    "ErrorClass",
    "check_keys",
    "did_you_mean",
    "finite_number",
    "require_bool",
    "require_date",
    "require_int",
    "require_list",
    "require_mapping",
    "require_string",
    "safe_count",
    "short_text",
    "shown",
]

ErrorClass = Callable[[str], Exception]
"""What a check raises: an exception class (or factory) taking the one-line message."""

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def short_text(text: str, limit: int = 40) -> str:
    """Untrusted text for a one-line message: ASCII only, no line breaks, at most ``limit``
    characters (cut with ``...``)."""
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def did_you_mean(word: str, known: Iterable[str], *, list_known: bool = True) -> str:
    """The hint after an unknown name: ``(did you mean 'signal_floor'?)`` for the closest
    known name (:func:`difflib.get_close_matches`), else ``(known: a, b, c)`` (``""`` with
    ``list_known=False``), else ``""`` when nothing is known. ``word`` is untrusted: a long
    one gets no guess."""
    names = sorted(set(known))
    if not names:
        return ""
    import difflib  # only for an error's hint: off the start-up path

    close = difflib.get_close_matches(word, names, n=1) if len(word) <= 64 else []
    if close:
        return f"(did you mean {close[0]!r}?)"
    return f"(known: {', '.join(names)})" if list_known else ""


def shown(value: object) -> str:
    """A rejected value as a message shows it, briefly and in JSON's terms: ``null``,
    ``boolean true``, ``0.5``, ``a huge integer``, ``string 'abc'``, else the type name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return repr(value) if abs(value) <= MAX_SAFE_INTEGER else "a huge integer"
    if isinstance(value, str):
        return f"string '{short_text(value)}'"
    return type(value).__name__


def finite_number(value: object, path: str, error: ErrorClass = InputError) -> float:
    """``value`` as a finite float: a JSON number (not a bool), an integer in the safe range,
    not NaN nor an infinity."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise error(f"{path}: must be a number, got {shown(value)}")
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise error(f"{path}: integer out of range, must satisfy |n| <= 2**53 - 1")
        return float(value)
    if not math.isfinite(value):
        raise error(f"{path}: must be finite, got {value!r}")
    return float(value)


def safe_count(value: object, path: str, error: ErrorClass = InputError) -> int:
    """``value`` as a count: an integer (not a bool) in ``[0, 2**53 - 1]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{path}: must be a non-negative integer, got {shown(value)}")
    if value > MAX_SAFE_INTEGER:
        raise error(f"{path}: integer out of range, must be <= 2**53 - 1")
    if value < 0:
        what = str(value) if value >= -MAX_SAFE_INTEGER else "a huge negative integer"
        raise error(f"{path}: must be a non-negative integer, got {what}")
    return int(value)


def require_int(value: object, path: str, *, low: int = 0, high: int = MAX_SAFE_INTEGER,
                error: ErrorClass = InputError) -> int:
    """``value`` must be an integer (not a bool) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise error(f"{path}: must be an integer in [{low}, {high}], got {shown(value)}")
    return int(value)


def require_mapping(value: object, path: str,
                    error: ErrorClass = InputError) -> Mapping[str, Any]:
    """``value`` must be a JSON object: a mapping whose keys are strings."""
    if not isinstance(value, Mapping):
        raise error(f"{path}: must be an object, got {shown(value)}")
    for key in value:
        if not isinstance(key, str):
            raise error(f"{path}: object keys must be strings, got {shown(key)}")
    return value


def check_keys(obj: Mapping[str, Any], path: str, required: frozenset[str],
               optional: frozenset[str], error: ErrorClass = InputError) -> None:
    """Refuse a missing required member, then any member outside ``required | optional``
    (the first in sorted order, so the message does not depend on the input's order)."""
    for key in sorted(required):
        if key not in obj:
            raise error(f"{path}.{key}: is required")
    for key in sorted(obj):
        if key not in required and key not in optional:
            raise error(f"{path}.{short_text(key)}: is not a known field")


def require_list(value: object, path: str, error: ErrorClass = InputError) -> list[Any]:
    """``value`` must be a JSON array (a list or tuple); returns a list."""
    if not isinstance(value, list | tuple):
        raise error(f"{path}: must be an array, got {shown(value)}")
    return list(value)


def require_string(value: object, path: str, error: ErrorClass = InputError) -> str:
    """``value`` must be a non-empty string."""
    if not isinstance(value, str) or not value:
        raise error(f"{path}: must be a non-empty string, got {shown(value)}")
    return value


def require_bool(value: object, path: str, error: ErrorClass = InputError) -> bool:
    """``value`` must be ``true`` or ``false``."""
    if not isinstance(value, bool):
        raise error(f"{path}: must be true or false, got {shown(value)}")
    return value


def require_date(value: object, path: str, error: ErrorClass = InputError) -> str:
    """``value`` must be a calendar date written ``YYYY-MM-DD`` (ISO 8601)."""
    if not isinstance(value, str) or _DATE.fullmatch(value) is None:
        raise error(f"{path}: must be a date YYYY-MM-DD, got {shown(value)}")
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise error(f"{path}: must be a date YYYY-MM-DD, got {shown(value)}") from None
    return value
