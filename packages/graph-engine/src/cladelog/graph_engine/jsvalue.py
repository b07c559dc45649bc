"""JavaScript value semantics on plain Python values (SPEC Q4).

Values are JSON-like Python values plus two extras:

* :data:`UNDEFINED`, JavaScript's ``undefined`` (``None`` is ``null``);
* :class:`JSFunction`, a callable exposed to expressions (globals and bound methods).

Numbers are ``int`` or ``float`` (never ``bool``: booleans are checked first everywhere).
Arithmetic runs on doubles and :func:`js_num` gives back an ``int`` for integral results in
the safe range, so facts read ``2`` rather than ``2.0``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

from cladelog.core.canonical import es6_number
from cladelog.core.fields import MAX_SAFE_INTEGER

__all__ = [
    "MAX_SAFE",
    "UNDEFINED",
    "JSFunction",
    "Undefined",
    "is_negative_zero",
    "is_number",
    "js_add",
    "js_compare",
    "js_json_int",
    "js_json_stringify",
    "js_loose_eq",
    "js_num",
    "js_parse_float",
    "js_parse_int",
    "js_round",
    "js_same",
    "js_strict_eq",
    "js_typeof",
    "to_fact_value",
    "to_int32",
    "to_number",
    "to_primitive",
    "to_string",
    "truthy",
]

MAX_SAFE: Final = MAX_SAFE_INTEGER


class Undefined:
    """The single ``undefined`` value."""

    _instance: Undefined | None = None

    def __new__(cls) -> Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Final = Undefined()


class JSFunction:
    """A function value callable from expressions; ``fn`` receives evaluated arguments."""

    __slots__ = ("fn", "name")

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name = name
        self.fn = fn

    def __repr__(self) -> str:
        return f"JSFunction({self.name})"


def is_number(value: Any) -> bool:
    """True for ``int``/``float`` values that are not ``bool``."""
    tp = type(value)
    return tp is int or tp is float


def js_num(value: float | int) -> float | int:
    """Normalize a numeric result: integral doubles in the safe range become ``int``.

    Negative zero stays the float ``-0.0`` (JavaScript keeps the sign of zero: ``1/-0`` is
    ``-Infinity``); facts never hold it (:func:`to_fact_value` stores ``0``).
    """
    if type(value) is int:
        if -MAX_SAFE <= value <= MAX_SAFE:
            return value
        return float(value)
    f = float(value)
    if f == f and f not in (math.inf, -math.inf) and f.is_integer() and abs(f) <= MAX_SAFE:
        if f or math.copysign(1.0, f) > 0:
            return int(f)
        return f  # -0.0
    return f


def is_negative_zero(value: Any) -> bool:
    """True for the float ``-0.0``."""
    return type(value) is float and value == 0 and math.copysign(1.0, value) < 0


def js_json_int(text: str) -> float | int:
    """An integer literal of JSON text as ``JSON.parse`` reads it: a double, so one beyond
    the safe range loses its low digits (``12345678901234567890`` is
    ``1.2345678901234567e19``), and ``-0`` is negative zero."""
    value = int(text)
    if value == 0 and text.startswith("-"):
        return -0.0
    return js_num(value)


def truthy(value: Any) -> bool:
    """JavaScript truthiness: ``[]`` and ``{}`` are truthy; 0, "", NaN, null, undefined not."""
    if value is None or value is UNDEFINED or value is False:
        return False
    if value is True:
        return True
    tp = type(value)
    if tp is int:
        return bool(value != 0)
    if tp is float:
        return bool(value == value and value != 0.0)
    if tp is str:
        return bool(value != "")
    return True


def js_typeof(value: Any) -> str:
    """The JavaScript ``typeof`` of a value."""
    if value is UNDEFINED:
        return "undefined"
    if value is True or value is False:
        return "boolean"
    if is_number(value):
        return "number"
    if type(value) is str:
        return "string"
    if isinstance(value, JSFunction):
        return "function"
    return "object"


def _format_number(value: float | int) -> str:
    if type(value) is int:
        if -MAX_SAFE <= value <= MAX_SAFE:
            return str(value)
        value = float(value)
    if value != value:
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    return es6_number(float(value))


def to_string(value: Any) -> str:
    """JavaScript ``String(value)``."""
    if type(value) is str:
        return value
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if is_number(value):
        return _format_number(value)
    if type(value) is list:
        return ",".join("" if v is None or v is UNDEFINED else to_string(v) for v in value)
    if isinstance(value, JSFunction):
        return f"function {value.name}() {{ [native code] }}"
    return "[object Object]"


_DEC_RE: Final = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_FLOAT_PREFIX_RE: Final = re.compile(
    r"[+-]?(?:Infinity|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
)
_JS_SPACE: Final = " \t\n\r\v\f\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def _float(text: str) -> float:
    try:
        return float(text)
    except (OverflowError, ValueError):  # pragma: no cover - regex-checked input
        return math.nan


def to_number(value: Any) -> float | int:
    """JavaScript ``Number(value)`` (``ToNumber``)."""
    tp = type(value)
    if tp is int or tp is float:
        return value  # type: ignore[no-any-return]
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    if tp is str:
        text = value.strip(_JS_SPACE)
        if text == "":
            return 0
        if len(text) > 2 and text[0] == "0" and text[1] in "xXoObB":
            base = {"x": 16, "o": 8, "b": 2}[text[1].lower()]
            try:
                return js_num(int(text[2:], base))
            except ValueError:
                return math.nan
        sign = -1.0 if text[0] == "-" else 1.0
        body = text[1:] if text[0] in "+-" else text
        if body == "Infinity":
            return sign * math.inf
        if _DEC_RE.fullmatch(text):
            return js_num(_float(text))
        return math.nan
    if tp is list or tp is dict:
        return to_number(to_primitive(value))
    return math.nan


def to_primitive(value: Any) -> Any:
    """``ToPrimitive`` with the default hint: arrays and objects become strings."""
    if type(value) is list or type(value) is dict or isinstance(value, JSFunction):
        return to_string(value)
    return value


def to_int32(value: Any) -> int:
    """JavaScript ``ToInt32``."""
    n = to_number(value)
    if type(n) is float and (n != n or n in (math.inf, -math.inf)):
        return 0
    k = int(n) & 0xFFFFFFFF
    return k - 0x100000000 if k >= 0x80000000 else k


def to_uint32(value: Any) -> int:
    """JavaScript ``ToUint32``."""
    return to_int32(value) & 0xFFFFFFFF


def js_add(left: Any, right: Any) -> Any:
    """JavaScript binary ``+``: string concatenation when either side is a string."""
    a = to_primitive(left)
    b = to_primitive(right)
    if type(a) is str or type(b) is str:
        return to_string(a) + to_string(b)
    return js_num(float(to_number(a)) + float(to_number(b)))


def js_strict_eq(left: Any, right: Any) -> bool:
    """JavaScript ``===`` (objects compare by identity)."""
    if is_number(left) and is_number(right):
        return bool(left == right)
    if type(left) is not type(right):
        return False
    if type(left) is list or type(left) is dict:
        return left is right
    return bool(left == right)


def js_loose_eq(left: Any, right: Any) -> bool:
    """JavaScript ``==`` (``undefined == null``, ``7 == "7"``, ``true == 1``)."""
    nullish_l = left is None or left is UNDEFINED
    nullish_r = right is None or right is UNDEFINED
    if nullish_l or nullish_r:
        return nullish_l and nullish_r
    if is_number(left) and is_number(right):
        return bool(left == right)
    tl, tr = type(left), type(right)
    if tl is tr and tl is not list and tl is not dict:
        return bool(left == right)
    if (tl is list or tl is dict) and (tr is list or tr is dict):
        return left is right
    if tl is bool:
        return js_loose_eq(1 if left else 0, right)
    if tr is bool:
        return js_loose_eq(left, 1 if right else 0)
    if is_number(left) and tr is str:
        return bool(left == to_number(right))
    if tl is str and is_number(right):
        return bool(to_number(left) == right)
    if tl is list or tl is dict:
        return js_loose_eq(to_primitive(left), right)
    if tr is list or tr is dict:
        return js_loose_eq(left, to_primitive(right))
    return False


def js_compare(op: str, left: Any, right: Any) -> bool:
    """JavaScript relational operators ``< > <= >=`` with their coercions."""
    a = to_primitive(left)
    b = to_primitive(right)
    if type(a) is str and type(b) is str:
        if op == "<":
            return a < b
        if op == ">":
            return a > b
        if op == "<=":
            return a <= b
        return a >= b
    x = to_number(a)
    y = to_number(b)
    if x != x or y != y:
        return False
    if op == "<":
        return x < y
    if op == ">":
        return x > y
    if op == "<=":
        return x <= y
    return x >= y


def js_round(value: Any) -> float | int:
    """``Math.round``: halves round toward +infinity (-7.5 gives -7)."""
    x = to_number(value)
    if type(x) is int:
        return x
    if x != x or x in (math.inf, -math.inf):
        return x
    floor = math.floor(x)
    rounded = floor + 1 if x - floor >= 0.5 else floor
    if rounded == 0 and (x < 0 or math.copysign(1.0, x) < 0):
        return -0.0  # Math.round(-0.4) and Math.round(-0) are -0
    return js_num(float(rounded))


def js_parse_float(value: Any) -> float | int:
    """``parseFloat``: the longest numeric prefix (``"1,234"`` gives 1), else NaN."""
    text = to_string(value).lstrip(_JS_SPACE)
    match = _FLOAT_PREFIX_RE.match(text)
    if match is None:
        return math.nan
    token = match.group(0)
    if token.lstrip("+-") == "Infinity":
        return -math.inf if token.startswith("-") else math.inf
    return js_num(_float(token))


def js_parse_int(value: Any, radix: Any = UNDEFINED) -> float | int:
    """``parseInt(value, radix)``: the longest integer prefix in the radix, else NaN."""
    text = to_string(value).strip(_JS_SPACE)
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    base = to_int32(radix) if radix is not UNDEFINED else 0
    if base == 0:
        base = 10
        if text[:2] in ("0x", "0X"):
            base = 16
            text = text[2:]
    elif base == 16 and text[:2] in ("0x", "0X"):
        text = text[2:]
    if base < 2 or base > 36:
        return math.nan
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    end = 0
    lowered = text.lower()
    while end < len(lowered) and lowered[end] in digits:
        end += 1
    if end == 0:
        return math.nan
    value = int(lowered[:end], base)
    if value == 0 and sign < 0:
        return -0.0  # parseInt("-0") is -0
    return js_num(sign * value)


def js_same(left: Any, right: Any) -> bool:
    """Deep equality of two JSON values (``1 == 1.0``, ``True`` is not ``1``).

    This is the test that makes an identical write a no-op (SPEC §0-16).
    """
    if left is right:
        return True
    tl, tr = type(left), type(right)
    if (tl is int or tl is float) and (tr is int or tr is float):
        return bool(left == right)
    if tl is not tr:
        return False
    if tl is list:
        return len(left) == len(right) and all(js_same(a, b) for a, b in zip(left, right))
    if tl is dict:
        if len(left) != len(right):
            return False
        for key, item in left.items():
            if key not in right or not js_same(item, right[key]):
                return False
        return True
    return bool(left == right)


def js_json_stringify(value: Any) -> Any:
    """``JSON.stringify`` without indentation; ``undefined`` for unencodable values.

    Numbers are formatted as JavaScript does (``1e21``, ``10000000000000000``, ``1e-7``,
    ``-0`` as ``0``); non-finite numbers become ``null``.
    """
    if value is UNDEFINED or isinstance(value, JSFunction):
        return UNDEFINED
    parts: list[str] = []
    _encode(value, parts, 0)
    return "".join(parts)


_encode_str: Final = json.JSONEncoder(ensure_ascii=False).encode


def _encode(value: Any, out: list[str], depth: int) -> None:
    if depth > 1000:
        raise ValueError("JSON.stringify: nested too deeply")
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif type(value) is str:
        out.append(_encode_str(value))
    elif type(value) is int or type(value) is float:
        f = float(value)
        out.append("null" if f != f or f in (math.inf, -math.inf) else _format_number(value))
    elif type(value) is list:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            if item is UNDEFINED or isinstance(item, JSFunction):
                out.append("null")
            else:
                _encode(item, out, depth + 1)
        out.append("]")
    elif type(value) is dict:
        out.append("{")
        first = True
        for key, item in value.items():
            if item is UNDEFINED or isinstance(item, JSFunction):
                continue
            if not first:
                out.append(",")
            first = False
            out.append(_encode_str(key if type(key) is str else to_string(key)))
            out.append(":")
            _encode(item, out, depth + 1)
        out.append("}")
    else:
        out.append("{}")  # another object (a namespace): no enumerable own properties


def to_fact_value(value: Any, path: str, depth: int = 0) -> Any:
    """Convert an expression or provider value into a storable JSON fact value.

    Non-finite numbers become ``null`` (as ``JSON.stringify`` does), integral doubles become
    ``int``, tuples become lists, ``undefined`` inside arrays becomes ``null`` and inside
    objects is dropped. Anything else that is not JSON raises ``TypeError`` naming ``path``
    (callers turn it into their own error type).
    """
    if depth > 48:
        raise TypeError(f"{path}: nested deeper than 48 levels")
    tp = type(value)
    if tp is str or value is None or tp is bool:
        return value
    if tp is int or tp is float:
        f = float(value)
        if f != f or f in (math.inf, -math.inf):
            return None
        if f == 0:
            return 0  # -0 is stored as 0, as JSON and the log keep it
        return js_num(value)
    if tp is list or tp is tuple:
        return [
            None if v is UNDEFINED else to_fact_value(v, f"{path}[{i}]", depth + 1)
            for i, v in enumerate(value)
        ]
    if tp is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(f"{path}: object key {key!r} is not a string")
            if item is UNDEFINED:
                continue
            out[key] = to_fact_value(item, f"{path}.{key}", depth + 1)
        return out
    raise TypeError(f"{path}: {tp.__name__} is not a JSON value")
