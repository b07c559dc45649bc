"""Strict readers for values taken from untrusted input (private helpers)."""

from __future__ import annotations

import math

__all__ = ["MAX_SAFE_INTEGER", "finite_number", "safe_count", "short_text"]

#: Largest integer a double holds exactly; larger counts are refused.
MAX_SAFE_INTEGER = 2**53 - 1


def finite_number(value: object, path: str, error: type[ValueError]) -> float:
    """Return ``value`` as a finite float, or raise ``error`` naming ``path``.

    ``bool`` is not a number here, integers must be exactly representable, and
    NaN and the infinities are refused.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise error(f"{path}: must be a number, got {_kind(value)}")
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise error(f"{path}: integer out of range, must satisfy |n| <= 2**53 - 1")
        return float(value)
    if not math.isfinite(value):
        raise error(f"{path}: must be finite, got {value!r}")
    return float(value)


def safe_count(value: object, path: str, error: type[ValueError]) -> int:
    """Return ``value`` as a non-negative integer, or raise ``error`` naming ``path``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{path}: must be a non-negative integer, got {_kind(value)}")
    if value > MAX_SAFE_INTEGER:
        raise error(f"{path}: integer out of range, must be <= 2**53 - 1")
    if value < 0:
        shown = str(value) if value >= -MAX_SAFE_INTEGER else "a huge negative integer"
        raise error(f"{path}: must be a non-negative integer, got {shown}")
    return int(value)


def _kind(value: object) -> str:
    """Describe a wrong-typed value briefly (type name, plus the value when short)."""
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


def short_text(text: str, limit: int = 40) -> str:
    """Render untrusted text for a one-line message: ASCII only, no newlines, bounded."""
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: limit - 3] + "..."
