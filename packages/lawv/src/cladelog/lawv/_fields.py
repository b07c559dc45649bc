"""Private helpers that read and check single JSON fields, naming their path on error.

The common rules (objects, known members, arrays, strings, booleans, integers in the
safe range, dates, how a bad value is shown) are :mod:`cladelog.core.fields`'; here they
raise :class:`~cladelog.lawv.errors.LawVInputError`. Numbers are Law V's own: finite and
within :data:`ELO_LIMIT`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from cladelog.core import fields
from cladelog.core.fields import MAX_SAFE_INTEGER as MAX_COUNT
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

req_mapping = functools.partial(fields.require_mapping, error=LawVInputError)
check_keys = functools.partial(fields.check_keys, error=LawVInputError)
req_list = functools.partial(fields.require_list, error=LawVInputError)
req_string = functools.partial(fields.require_string, error=LawVInputError)
req_bool = functools.partial(fields.require_bool, error=LawVInputError)
req_int = functools.partial(fields.require_int, error=LawVInputError)
req_date = functools.partial(fields.require_date, error=LawVInputError)


def fail(path: str, problem: str, value: Any = ...) -> LawVInputError:
    """Build the error for ``path``; appends ``got <value>`` when a value is given."""
    if value is ...:
        return LawVInputError(f"{path}: {problem}")
    return LawVInputError(f"{path}: {problem}, got {fields.shown(value)}")


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
