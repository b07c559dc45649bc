"""Canonical JSON bytes (RFC 8785, JSON Canonicalization Scheme) and digests.

Every hash in cladelog is taken over the bytes this module produces, so two
implementations in any language agree when they follow the same rules:

* objects: members sorted by key, comparing keys as sequences of UTF-16 code
  units; no whitespace anywhere; keys must be strings;
* strings: UTF-8, with only ``"``, ``\\``, and the control characters below
  U+0020 escaped (``\\b \\f \\n \\r \\t`` by name, the rest as ``\\u00xx``
  with lower-case hex); everything else is written as is;
* numbers: the shortest decimal that round-trips to the same IEEE-754 double,
  formatted the way ECMAScript's ``Number.prototype.toString`` does
  (``1`` not ``1.0``, ``1e-7`` not ``1e-07``, ``1e+21``); ``-0`` is ``0``;
* ``true``, ``false``, ``null`` as literals; arrays in order.

cladelog adds three input rules that the RFC leaves to the application:
NaN and the infinities are refused, integers must lie in the I-JSON safe range
``|n| <= 2**53 - 1`` (beyond it a double cannot hold them exactly), and
nesting deeper than :data:`MAX_DEPTH` is refused. Refusals raise
:class:`CanonicalError` whose message names the offending path.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import orjson

from .errors import InputError

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "CanonicalError",
    "canonical_bytes",
    "canonical_digest",
    "canonical_text",
    "es6_number",
]

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 64

#: what orjson (the encoder of plain values) is asked for: keys sorted by code point, which
#: is RFC 8785's UTF-16 order for the keys it is given (ASCII ones, see :func:`_quick`)
_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS


class CanonicalError(InputError):
    """A value cannot be encoded canonically; the message names its path (an
    :class:`~cladelog.core.InputError`, so also a ``ValueError``)."""


def es6_number(value: float) -> str:
    """Format a finite double the way ECMAScript's Number#toString does."""
    if not math.isfinite(value):
        raise CanonicalError("NaN and Infinity have no canonical JSON form")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    from decimal import Decimal  # only odd floats come here: keep it off the start path

    # repr gives the shortest round-trip digits; Decimal splits them from the exponent.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    stripped = digits.rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digits) - len(stripped)
    digits = stripped
    n = len(digits) + exponent  # the decimal point sits after n digits
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exp = n - 1
    exp_str = ("+" if exp >= 0 else "-") + str(abs(exp))
    if k == 1:
        return sign + digits + "e" + exp_str
    return sign + digits[0] + "." + digits[1:] + "e" + exp_str


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be")


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


_json_string = json.JSONEncoder(ensure_ascii=False).encode


def _string(value: str) -> str:
    # The C encoder escapes exactly what RFC 8785 escapes (quote, backslash, and
    # U+0000..U+001F with the short forms \b \t \n \f \r, others as lower-case \u00xx).
    return _json_string(value)


def _check_string(value: str, path: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError(f"{path}: string contains a lone surrogate, not valid UTF-8") from None


def _scan(value: Any, path: str, depth: int) -> bool:
    """Validate ``value``; return True when the fast json path would differ from JCS."""
    if depth > MAX_DEPTH:
        raise CanonicalError(f"{path}: nested deeper than {MAX_DEPTH} levels")
    tp = type(value)
    if value is None or value is True or value is False:
        return False
    # Subclasses (IntEnum, str enums, OrderedDict, ...) are validated like their
    # plain base type, encoded by their plain value, and always take the slow path.
    plain = tp in (str, int, float, dict, list, tuple)
    if isinstance(value, str):
        _check_string(str.__str__(value), path)
        return not plain
    if isinstance(value, int):
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return not plain
        raise CanonicalError(
            f"{path}: integer {int.__repr__(value)} is outside the safe range +/-(2**53-1)"
        )
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalError(f"{path}: NaN and Infinity are not allowed")
        # repr matches ES6 only for non-integral values in [1e-4, 1e16)
        a = abs(value)
        return not plain or value.is_integer() or a < 1e-4 or a >= 1e16
    if isinstance(value, dict):
        slow = not plain
        for key, item in value.items():
            if type(key) is not str:
                raise CanonicalError(f"{path}: object key {key!r} is not a string")
            _check_string(key, path)
            if not key.isascii() and any(ord(c) > 0xFFFF for c in key):
                slow = True  # UTF-16 order differs from code-point order
            if _scan(item, f"{path}.{key}", depth + 1):
                slow = True
        return slow
    if isinstance(value, list | tuple):
        slow = not plain
        for i, item in enumerate(value):
            if _scan(item, f"{path}[{i}]", depth + 1):
                slow = True
        return slow
    raise CanonicalError(f"{path}: {tp.__name__} is not a JSON value")


def _encode(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(str.__str__(value)))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(es6_number(float.__float__(value)))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key in sorted(value, key=_utf16_key):
            if not first:
                out.append(",")
            first = False
            out.append(_string(key))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    else:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")


class _Invalid(Exception):
    """Raised by the quick scan; the detailed scan then names the path."""


def _quick(value: Any, depth: int) -> bool:
    """The hot-path twin of :func:`_scan`: no paths, no subclasses; True = take the slow path.

    Raises :class:`_Invalid` on anything :func:`_scan` would refuse (and on
    things it might accept, such as subclasses, by returning True instead).
    Lone surrogates are caught later, by orjson, which refuses them.
    """
    if depth > MAX_DEPTH:
        raise _Invalid
    tp = type(value)
    if (tp is dict or tp is list or tp is tuple) and value and depth >= MAX_DEPTH:
        raise _Invalid  # its items would sit deeper than allowed
    if tp is dict or tp is list or tp is tuple:
        slow = False
        items: Any = value
        if tp is dict:
            for key in value:
                if type(key) is not str:
                    raise _Invalid
                if not key.isascii():
                    slow = True  # UTF-16 key order: leave it to the slow encoder
            items = value.values()
        for item in items:
            it = type(item)
            if it is str or it is bool or item is None:
                continue
            if it is int:
                if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                    continue
                raise _Invalid
            if it is float:  # the float case below, inlined: a call per number is the cost
                # the usual number, non-integral in [1e-4, 1e16), is finite: one test for it
                # (NaN and the infinities fail the range test and are refused just below)
                if 1e-4 <= abs(item) < 1e16 and not item.is_integer():
                    continue
                if item - item != 0.0:
                    raise _Invalid
                slow = True
                continue
            if _quick(item, depth + 1):
                slow = True
        return slow
    if tp is str or tp is bool or value is None:
        return False
    if tp is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return False
        raise _Invalid
    if tp is float:
        if value - value != 0.0:  # NaN or an infinity
            raise _Invalid
        # repr matches ES6 only for non-integral values in [1e-4, 1e16)
        a = abs(value)
        return bool(value.is_integer() or a < 1e-4 or a >= 1e16)
    if isinstance(value, str | int | float | dict | list | tuple):
        return True  # subclasses: validated and encoded by the slow path
    raise _Invalid


def _ints_for_integral_floats(value: Any) -> Any:
    """A copy with integral floats below 2**53 as ints; :class:`_Invalid` if anything else
    would still need the slow encoder (tiny or huge floats, non-ASCII keys, subclasses)."""
    tp = type(value)
    if tp is dict:
        out = {}
        for key, item in value.items():
            if not key.isascii():
                raise _Invalid
            out[key] = _ints_for_integral_floats(item)
        return out
    if tp is list or tp is tuple:
        return [_ints_for_integral_floats(item) for item in value]
    if tp is float:
        a = abs(value)
        if value.is_integer():
            if a < 2.0**53:
                return int(value)
            raise _Invalid  # beyond 2**53 ES6 pads the shortest digits with zeros
        if a < 1e-4 or a >= 1e16:
            raise _Invalid
        return value
    if tp is str or tp is int or tp is bool or value is None:
        return value
    raise _Invalid


def canonical_bytes(value: Any, *, path: str = "$") -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON value.

    Raises :class:`CanonicalError` naming the path of the first value that has
    no canonical form (NaN, infinity, unsafe integer, non-string key, ...).

    Plain values whose every number orjson writes as RFC 8785 does (integers in the safe
    range, non-integral floats in [1e-4, 1e16)) and whose keys are ASCII are encoded by
    orjson; everything else by :func:`_encode`, the reference (a property test holds the
    two to the same bytes).
    """
    if value.__class__ is str:  # a string member of an event body, say: no scan needed
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate: the scan below names it
    try:
        slow = _quick(value, 0)
    except _Invalid:
        _scan(value, path, 0)  # raises with the path
        raise CanonicalError(f"{path}: not a canonical JSON value") from None
    if slow:
        # most slow documents only hold integral floats such as 20.0: rewritten as
        # ints (exact below 2**53, and formatted identically) they take the fast path
        try:
            value = _ints_for_integral_floats(value)
            slow = False
        except _Invalid:
            pass
    if not slow:
        try:
            return orjson.dumps(value, option=_ORJSON_OPTIONS)
        except orjson.JSONEncodeError:  # a lone surrogate, the one thing left to it
            _scan(value, path, 0)  # names the string
            raise CanonicalError(f"{path}: string contains a lone surrogate") from None
    _scan(value, path, 0)
    out: list[str] = []
    _encode(value, out)
    return "".join(out).encode("utf-8")  # _scan refused lone surrogates


def canonical_text(value: Any, *, path: str = "$") -> str:
    """:func:`canonical_bytes` as text."""
    return canonical_bytes(value, path=path).decode("utf-8")


def canonical_digest(value: Any) -> str:
    """Hex SHA-256 of :func:`canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def quick_canonical_value(body: bytes) -> Any:
    """The value of ``body`` when it is canonical JSON by the fast test, else ``None``
    (the caller then reads it with the strict reader: ``None`` is no verdict).

    The plain parser (orjson) reads it, and the value must re-encode to the very bytes
    read. Whatever the strict reader refuses is never canonical (a repeated member
    re-encodes without its twin; NaN, Infinity, 1e999 and lone surrogates have no canonical
    form; non-UTF-8 text never equals UTF-8 bytes), and a value that re-encodes to the bytes
    parsed is the one any correct parser reads from them (a canonical number is the
    shortest form of exactly one double).
    """
    try:
        value = orjson.loads(body)
        if canonical_bytes(value) == body:
            return value
    except (ValueError, RecursionError, CanonicalError):
        pass
    return None
