"""A safe parser and evaluator for the expression language of SPEC §1.5.

The source is split by a hand-written tokenizer, parsed by a precedence-climbing (Pratt)
parser into a small tuple AST, and compiled into Python closures. Nothing is ever handed to
Python's ``eval``/``exec``/``compile``; member access reads only dict keys, list/string
properties and a fixed allow-list of methods, never Python attributes.

Reference tokens (``$name``, ``$$clock:tick``, ``$label.length``) become reference nodes whose
path (the token minus its first ``$``) is resolved by a caller-supplied function, so the same
compiled expression serves every object.

Limits: the source is at most :data:`MAX_SOURCE` characters and the syntax tree at most
:data:`MAX_DEPTH` levels deep; beyond them :class:`ExpressionError` is raised at compile time.
Runtime errors (calling a non-function, a blocked property, ...) make the whole expression
``undefined``, as in the reference.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from .errors import ExpressionError
from .jsvalue import (
    UNDEFINED,
    JSFunction,
    is_number,
    js_add,
    js_compare,
    js_json_int,
    js_json_stringify,
    js_loose_eq,
    js_num,
    js_parse_float,
    js_parse_int,
    js_round,
    js_strict_eq,
    to_int32,
    to_number,
    to_string,
    to_uint32,
    truthy,
)
from .refs import REF_TOKEN_RE, lex

__all__ = [
    "BLOCKED_PROPERTIES",
    "MAX_DEPTH",
    "MAX_SOURCE",
    "REF_TOKEN_RE",
    "Expression",
    "JSRuntimeError",
    "compile_expression",
    "compile_gate",
    "join_sources",
]

MAX_SOURCE: Final = 16_384
MAX_DEPTH: Final = 120
BLOCKED_PROPERTIES: Final = frozenset({"constructor", "__proto__", "prototype"})
_BINARY_PREC: Final = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
    "==": 6, "!=": 6, "===": 6, "!==": 6,
    "<": 7, ">": 7, "<=": 7, ">=": 7,
    "<<": 8, ">>": 8, ">>>": 8,
    "+": 9, "-": 9, "*": 10, "/": 10, "%": 10, "**": 11,
}
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


class JSRuntimeError(Exception):
    """Raised inside evaluation; turned into ``undefined`` by :meth:`Expression.evaluate`."""


# ----------------------------------------------------------------------------- tokenizer


def _tokenize(src: str) -> list[tuple[str, Any, int]]:
    """Split ``src`` into ``(kind, value, position)`` tokens; kinds: num str ref id op.

    The lexemes come from :func:`cladelog.graph_engine.refs.lex`, the one owner of where a
    reference token starts; this gives them their values and rejects the faults.
    """
    tokens: list[tuple[str, Any, int]] = []
    for kind, start, end in lex(src):
        if kind == "ref":
            tokens.append(("ref", src[start + 1 : end], start))
        elif kind == "num":
            text = src[start:end]
            value = int(text, 16) if text[:2] in ("0x", "0X") else float(text)
            tokens.append(("num", js_num(value), start))
        elif kind == "str" or kind == "open-str":
            after, text = _read_string(src, start)  # raises on an unterminated literal
            tokens.append(("str", text, after))
        elif kind == "id" or kind == "op":
            tokens.append((kind, src[start:end], start))
        elif kind == "bad-num":
            raise ExpressionError(f"bad number at {start}")
        else:
            raise ExpressionError(f"unexpected character {src[start]!r} at {start}")
    tokens.append(("eof", None, len(src)))
    return tokens


def _read_string(src: str, start: int) -> tuple[int, str]:
    quote = src[start]
    out: list[str] = []
    i = start + 1
    n = len(src)
    while i < n:
        ch = src[i]
        if ch == quote:
            return i + 1, "".join(out)
        if ch == "\\":
            i += 1
            if i >= n:
                break
            esc = src[i]
            if esc == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", src[i + 1 : i + 5]):
                out.append(chr(int(src[i + 1 : i + 5], 16)))
                i += 5
                continue
            if esc == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", src[i + 1 : i + 3]):
                out.append(chr(int(src[i + 1 : i + 3], 16)))
                i += 3
                continue
            out.append(_ESCAPES.get(esc, esc))
            i += 1
            continue
        out.append(ch)
        i += 1
    raise ExpressionError(f"unterminated string starting at {start}")


# ----------------------------------------------------------------------------- parser

Node = tuple[Any, ...]  # (kind, depth, ...)


class _Parser:
    def __init__(self, src: str) -> None:
        self.tokens = _tokenize(src)
        self.pos = 0
        self.nesting = 0
        self.refs: list[str] = []

    # helpers -----------------------------------------------------------------
    def peek(self) -> tuple[str, Any, int]:
        return self.tokens[self.pos]

    def next(self) -> tuple[str, Any, int]:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def at_op(self, op: str) -> bool:
        tok = self.tokens[self.pos]
        return tok[0] == "op" and tok[1] == op

    def expect(self, op: str) -> None:
        tok = self.next()
        if tok[0] != "op" or tok[1] != op:
            raise ExpressionError(f"expected {op!r} at {tok[2]}, got {_describe(tok)}")

    def mk(self, kind: str, *parts: Any) -> Node:
        depth = 1
        for part in parts:
            if type(part) is tuple and part and type(part[0]) is str and len(part) > 1:
                depth = max(depth, part[1] + 1)
            elif type(part) is list:
                for item in part:
                    if type(item) is tuple and len(item) > 1 and type(item[1]) is int:
                        depth = max(depth, item[1] + 1)
                    elif type(item) is tuple:  # object literal entries (key, node)
                        for sub in item:
                            if type(sub) is tuple and len(sub) > 1 and type(sub[1]) is int:
                                depth = max(depth, sub[1] + 1)
        if depth > MAX_DEPTH:
            raise ExpressionError(f"expression nested deeper than {MAX_DEPTH} levels")
        return (kind, depth, *parts)

    def enter(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_DEPTH // 2:
            raise ExpressionError(f"expression nested deeper than {MAX_DEPTH // 2} levels")

    # grammar -----------------------------------------------------------------
    def program(self) -> Node:
        items: list[Node] = []
        while self.peek()[0] != "eof":
            if self.at_op(","):
                self.next()
                continue
            items.append(self.expression())
        if not items:
            return self.mk("lit", UNDEFINED)
        if len(items) == 1:
            return items[0]
        return self.mk("seq", items)

    def expression(self) -> Node:
        self.enter()
        try:
            cond = self.binary(0)
            if self.at_op("?"):
                self.next()
                yes = self.expression()
                self.expect(":")
                no = self.expression()
                return self.mk("cond", cond, yes, no)
            return cond
        finally:
            self.nesting -= 1

    def binary(self, min_prec: int) -> Node:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok[0] != "op":
                return left
            prec = _BINARY_PREC.get(tok[1])
            if prec is None or prec <= min_prec:
                return left
            self.next()
            op = tok[1]
            # ** is right-associative: parse its right side at one level lower
            right = self.binary(prec - 1 if op == "**" else prec)
            kind = "logic" if op in ("&&", "||") else "bin"
            left = self.mk(kind, op, left, right)

    def unary(self) -> Node:
        tok = self.peek()
        if tok[0] == "op" and tok[1] in ("!", "-", "+", "~"):
            self.next()
            self.enter()
            try:
                return self.mk("unary", tok[1], self.unary())
            finally:
                self.nesting -= 1
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if self.at_op("."):
                self.next()
                tok = self.next()
                if tok[0] != "id":
                    raise ExpressionError(f"expected a property name at {tok[2]}")
                _check_blocked(tok[1], tok[2])
                node = self.mk("member", node, self.mk("lit", tok[1]))
            elif self.at_op("["):
                self.next()
                prop = self.sequence("]")
                if prop[0] == "lit" and type(prop[2]) is str:
                    _check_blocked(prop[2], self.peek()[2])
                node = self.mk("member", node, prop)
            elif self.at_op("("):
                self.next()
                args = self.list_items(")")
                node = self.mk("call", node, args)
            else:
                return node

    def sequence(self, close: str) -> Node:
        items = self.list_items(close)
        if not items:
            raise ExpressionError(f"empty {close!r} group")
        return items[-1] if len(items) == 1 else self.mk("seq", items)

    def list_items(self, close: str) -> list[Node]:
        items: list[Node] = []
        while not self.at_op(close):
            if self.peek()[0] == "eof":
                raise ExpressionError(f"missing {close!r} at end of expression")
            items.append(self.expression())
            if self.at_op(","):
                self.next()
            elif not self.at_op(close):
                tok = self.peek()
                raise ExpressionError(
                    f"expected ',' or {close!r} at {tok[2]}, got {_describe(tok)}"
                )
        self.next()
        return items

    def primary(self) -> Node:
        tok = self.next()
        kind, value, pos = tok
        if kind in ("num", "str"):
            return self.mk("lit", value)
        if kind == "ref":
            self.refs.append(value)
            return self.mk("ref", value)
        if kind == "id":
            if value == "true":
                return self.mk("lit", True)
            if value == "false":
                return self.mk("lit", False)
            if value == "null":
                return self.mk("lit", None)
            return self.mk("id", value)
        if kind == "op":
            if value == "(":
                self.enter()
                try:
                    return self.sequence(")")
                finally:
                    self.nesting -= 1
            if value == "[":
                self.enter()
                try:
                    return self.mk("arr", self.list_items("]"))
                finally:
                    self.nesting -= 1
            if value == "{":
                self.enter()
                try:
                    return self.object_literal()
                finally:
                    self.nesting -= 1
        raise ExpressionError(f"unexpected {_describe(tok)} at {pos}")

    def object_literal(self) -> Node:
        entries: list[tuple[Node, Node]] = []
        while not self.at_op("}"):
            tok = self.next()
            if tok[0] in ("id", "str", "num"):
                key: Node = self.mk("lit", to_string(tok[1]))
                _check_blocked(to_string(tok[1]), tok[2])
            elif tok[0] == "op" and tok[1] == "[":
                key = self.sequence("]")
            else:
                raise ExpressionError(f"bad object key {_describe(tok)} at {tok[2]}")
            self.expect(":")
            entries.append((key, self.expression()))
            if self.at_op(","):
                self.next()
            elif not self.at_op("}"):
                raise ExpressionError(f"expected ',' or '}}' at {self.peek()[2]}")
        self.next()
        return self.mk("obj", entries)


def _describe(tok: tuple[str, Any, int]) -> str:
    if tok[0] == "eof":
        return "end of expression"
    return repr(tok[1]) if tok[0] != "ref" else repr("$" + tok[1])


def _check_blocked(name: str, pos: int) -> None:
    if name in BLOCKED_PROPERTIES:
        raise ExpressionError(f"property {name!r} is blocked (at {pos})")


# ----------------------------------------------------------------------------- runtime

Ctx = tuple[Callable[[str], Any], Mapping[str, Any] | None]
Code = Callable[[Ctx], Any]


def _utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _method(name: str, fn: Callable[..., Any]) -> JSFunction:
    return JSFunction(name, fn)


def _arg(args: tuple[Any, ...], i: int) -> Any:
    return args[i] if len(args) > i else UNDEFINED


def _slice_bounds(length: int, args: tuple[Any, ...]) -> tuple[int, int]:
    def norm(value: Any, default: int) -> int:
        if value is UNDEFINED:
            return default
        n = to_number(value)
        if n != n:
            return 0
        if n in (math.inf, -math.inf):
            return length if n > 0 else 0
        k = int(n)
        return max(0, length + k) if k < 0 else min(k, length)

    return norm(_arg(args, 0), 0), norm(_arg(args, 1), length)


def _string_member(text: str, key: str) -> Any:
    if key == "length":
        return _utf16_len(text)
    if key.isdigit():
        idx = int(key)
        return text[idx] if idx < len(text) else UNDEFINED
    fns: dict[str, Callable[..., Any]] = {
        "toUpperCase": lambda *a: text.upper(),
        "toLowerCase": lambda *a: text.lower(),
        "trim": lambda *a: text.strip(),
        "includes": lambda *a: to_string(_arg(a, 0)) in text,
        "startsWith": lambda *a: text.startswith(to_string(_arg(a, 0))),
        "endsWith": lambda *a: text.endswith(to_string(_arg(a, 0))),
        "indexOf": lambda *a: text.find(to_string(_arg(a, 0))),
        "charAt": lambda *a: _char_at(text, _arg(a, 0)),
        "slice": lambda *a: text[slice(*_slice_bounds(len(text), a))],
        "split": lambda *a: _split(text, _arg(a, 0)),
        "concat": lambda *a: text + "".join(to_string(x) for x in a),
        "toString": lambda *a: text,
    }
    fn = fns.get(key)
    return UNDEFINED if fn is None else _method(key, fn)


def _char_at(text: str, index: Any) -> str:
    i = int(to_number(index)) if index is not UNDEFINED else 0
    return text[i] if 0 <= i < len(text) else ""


def _split(text: str, sep: Any) -> list[str]:
    if sep is UNDEFINED:
        return [text]
    s = to_string(sep)
    return list(text) if s == "" else text.split(s)


def _array_member(arr: list[Any], key: str) -> Any:
    if key == "length":
        return len(arr)
    if key.isdigit():
        idx = int(key)
        return arr[idx] if idx < len(arr) else UNDEFINED
    fns: dict[str, Callable[..., Any]] = {
        "includes": lambda *a: any(_same_value_zero(x, _arg(a, 0)) for x in arr),
        "indexOf": lambda *a: next(
            (i for i, x in enumerate(arr) if js_strict_eq(x, _arg(a, 0))), -1
        ),
        "join": lambda *a: (
            "," if _arg(a, 0) is UNDEFINED else to_string(_arg(a, 0))
        ).join("" if x is None or x is UNDEFINED else to_string(x) for x in arr),
        "slice": lambda *a: arr[slice(*_slice_bounds(len(arr), a))],
        "concat": lambda *a: arr + [y for x in a for y in (x if type(x) is list else [x])],
    }
    fn = fns.get(key)
    return UNDEFINED if fn is None else _method(key, fn)


def _same_value_zero(a: Any, b: Any) -> bool:
    if is_number(a) and is_number(b) and a != a and b != b:
        return True
    return js_strict_eq(a, b)


def _number_member(value: float | int, key: str) -> Any:
    if key == "toFixed":
        return _method("toFixed", lambda *a: _to_fixed(value, _arg(a, 0)))
    if key == "toString":
        return _method("toString", lambda *a: to_string(value))
    return UNDEFINED


def _to_fixed(value: float | int, digits: Any) -> str:
    d = 0 if digits is UNDEFINED else int(to_number(digits))
    if d < 0 or d > 100:
        raise JSRuntimeError("toFixed digits out of range")
    f = float(value)
    if f != f or abs(f) >= 1e21:
        return to_string(value)
    if f == 0:
        f = 0.0  # (-0).toFixed(2) is "0.00" (only a value below zero gets a "-")
    from decimal import ROUND_HALF_UP, Decimal

    quant = Decimal(1).scaleb(-d)
    return str(Decimal(f).quantize(quant, rounding=ROUND_HALF_UP))


class _Namespace:
    """A read-only object of named members (``Math``, ``JSON``)."""

    __slots__ = ("members", "name")

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.name = name
        self.members = members


def get_member(obj: Any, key: Any) -> Any:
    """Read ``obj[key]`` with JavaScript semantics on the allowed value kinds."""
    if obj is None or obj is UNDEFINED:
        return UNDEFINED
    name = key if type(key) is str else to_string(key)
    if name in BLOCKED_PROPERTIES:
        raise JSRuntimeError(f"property {name!r} is blocked")
    tp = type(obj)
    if tp is dict:
        return obj.get(name, UNDEFINED)
    if tp is list:
        return _array_member(obj, name)
    if tp is str:
        return _string_member(obj, name)
    if tp is int or tp is float:
        return _number_member(obj, name)
    if isinstance(obj, _Namespace):
        return obj.members.get(name, UNDEFINED)
    if isinstance(obj, _Callable):
        return obj.members.get(name, UNDEFINED)
    return UNDEFINED


class _Callable(JSFunction):
    """A global function that also has members (``Number.isInteger``)."""

    __slots__ = ("members",)

    def __init__(self, name: str, fn: Callable[..., Any], members: dict[str, Any]) -> None:
        super().__init__(name, fn)
        self.members = members


def _math_fn(name: str, fn: Callable[..., float]) -> JSFunction:
    def call(*args: Any) -> Any:
        try:
            return js_num(fn(*[float(to_number(a)) for a in args]))
        except OverflowError:
            return math.inf
        except (ValueError, ZeroDivisionError):
            return math.nan

    return JSFunction(name, call)


def _odd_integer(b: float) -> bool:
    return b.is_integer() and int(b) % 2 == 1


def _js_pow(a: float, b: float) -> float:
    """``Math.pow`` / ``**`` (ECMAScript Number::exponentiate)."""
    if b != b:
        return math.nan
    if b == 0:
        return 1.0
    if a != a:
        return math.nan
    if b in (math.inf, -math.inf) and abs(a) == 1:
        return math.nan  # 1 ** Infinity is NaN (Python says 1)
    if a < 0 and a != -math.inf and b not in (math.inf, -math.inf) and not b.is_integer():
        return math.nan  # a negative finite base with a non-integer exponent
    if a == 0 and b < 0:  # Python raises; JavaScript gives +-Infinity
        negative = math.copysign(1.0, a) < 0 and _odd_integer(b)
        return -math.inf if negative else math.inf
    try:
        result = a**b
    except ZeroDivisionError:  # pragma: no cover - zero bases are handled above
        return math.inf
    except OverflowError:
        return -math.inf if a < 0 and _odd_integer(b) else math.inf
    if isinstance(result, complex):  # pragma: no cover - negative bases are handled above
        return math.nan
    return float(result)


def _js_max(*args: float) -> float:
    if any(a != a for a in args):
        return math.nan
    found = max(args, default=-math.inf)
    if found == 0 and any(a == 0 and math.copysign(1.0, a) > 0 for a in args):
        return 0.0  # +0 is above -0
    return found


def _js_min(*args: float) -> float:
    if any(a != a for a in args):
        return math.nan
    found = min(args, default=math.inf)
    if found == 0 and any(a == 0 and math.copysign(1.0, a) < 0 for a in args):
        return -0.0  # -0 is below +0
    return found


def _js_log(x: float, fn: Callable[[float], float]) -> float:
    if x == 0:
        return -math.inf
    if x < 0 or x != x:
        return math.nan
    if x == math.inf:
        return math.inf
    return fn(x)


def _sign(x: float) -> float:
    if x != x or x == 0:
        return x  # NaN, and a zero keeps its sign
    return float((x > 0) - (x < 0))


def _integral_of(fn: Callable[[float], int]) -> Callable[[float], float]:
    """``Math.ceil``/``floor``/``trunc``: a zero result of a negative argument is ``-0``."""

    def run(x: float) -> float:
        if x != x or x in (math.inf, -math.inf) or x == 0:
            return x
        result = float(fn(x))
        return -0.0 if result == 0 and x < 0 else result

    return run


_trunc: Final = _integral_of(math.trunc)


_MATH: Final = _Namespace(
    "Math",
    {
        "PI": math.pi,
        "E": math.e,
        "LN2": math.log(2),
        "LN10": math.log(10),
        "SQRT2": math.sqrt(2),
        "abs": _math_fn("abs", abs),
        "ceil": _math_fn("ceil", _integral_of(math.ceil)),
        "floor": _math_fn("floor", _integral_of(math.floor)),
        "round": JSFunction("round", lambda *a: js_round(_arg(a, 0))),
        "trunc": _math_fn("trunc", _trunc),
        "sign": _math_fn("sign", _sign),
        "max": _math_fn("max", _js_max),
        "min": _math_fn("min", _js_min),
        "pow": _math_fn("pow", _js_pow),
        "sqrt": _math_fn("sqrt", lambda x: math.nan if x < 0 else math.sqrt(x)),
        "cbrt": _math_fn("cbrt", lambda x: math.copysign(abs(x) ** (1 / 3), x)),
        "exp": _math_fn("exp", math.exp),
        "log": _math_fn("log", lambda x: _js_log(x, math.log)),
        "log2": _math_fn("log2", lambda x: _js_log(x, math.log2)),
        "log10": _math_fn("log10", lambda x: _js_log(x, math.log10)),
    },
)


def _from_json(value: Any) -> Any:
    return js_num(value) if type(value) is int else value


def _json_parse(*args: Any) -> Any:
    text = to_string(_arg(args, 0))
    if len(text) > MAX_SOURCE * 64:
        raise JSRuntimeError("JSON.parse input too large")
    try:
        return json.loads(text, parse_int=js_json_int,
                          parse_constant=lambda s: _raise_json(s))
    except (ValueError, RecursionError) as exc:
        raise JSRuntimeError(f"JSON.parse: {exc}") from None


def _raise_json(token: str) -> Any:
    raise ValueError(f"bad token {token}")


_JSON: Final = _Namespace(
    "JSON",
    {
        "stringify": JSFunction("stringify", lambda *a: js_json_stringify(_arg(a, 0))),
        "parse": JSFunction("parse", _json_parse),
    },
)


def _matches(elem: Any, op: Any, val: Any) -> bool:
    if op is UNDEFINED:
        return truthy(elem)
    if op == "==":
        return js_loose_eq(elem, val)
    if op == "!=":
        return not js_loose_eq(elem, val)
    if op == "===":
        return js_strict_eq(elem, val)
    if op == "!==":
        return not js_strict_eq(elem, val)
    if op in ("<", ">", "<=", ">="):
        return js_compare(op, elem, val)
    return False


def _count(*args: Any) -> int:
    arr = _arg(args, 0)
    if type(arr) is not list:
        return 0
    op, val = _arg(args, 1), _arg(args, 2)
    return sum(1 for e in arr if _matches(e, op, val))


def _all(*args: Any) -> bool:
    arr = _arg(args, 0)
    if type(arr) is not list:
        return False
    op, val = _arg(args, 1), _arg(args, 2)
    return all(_matches(e, op, val) for e in arr)


def _any(*args: Any) -> bool:
    arr = _arg(args, 0)
    if type(arr) is not list:
        return False
    op, val = _arg(args, 1), _arg(args, 2)
    return any(_matches(e, op, val) for e in arr)


def _is_nan(*args: Any) -> bool:
    n = to_number(_arg(args, 0))
    return n != n


def _is_finite(*args: Any) -> bool:
    n = to_number(_arg(args, 0))
    return n == n and n not in (math.inf, -math.inf)


def _number_is_integer(*args: Any) -> bool:
    x = _arg(args, 0)
    return is_number(x) and _is_finite(x) and float(x).is_integer()


GLOBALS: Final[dict[str, Any]] = {
    "Math": _MATH,
    "JSON": _JSON,
    "Number": _Callable(
        "Number",
        lambda *a: to_number(a[0]) if a else 0,
        {
            "isInteger": JSFunction("isInteger", _number_is_integer),
            "isFinite": JSFunction("isFinite", lambda *a: is_number(_arg(a, 0))
                                   and _is_finite(_arg(a, 0))),
            "isNaN": JSFunction("isNaN", lambda *a: is_number(_arg(a, 0)) and _is_nan(_arg(a, 0))),
            "parseFloat": JSFunction("parseFloat", lambda *a: js_parse_float(_arg(a, 0))),
            "parseInt": JSFunction("parseInt", lambda *a: js_parse_int(_arg(a, 0), _arg(a, 1))),
        },
    ),
    "String": JSFunction("String", lambda *a: to_string(a[0]) if a else ""),
    "Boolean": JSFunction("Boolean", lambda *a: truthy(_arg(a, 0))),
    "Array": _Callable(
        "Array",
        lambda *a: list(a),
        {"isArray": JSFunction("isArray", lambda *a: type(_arg(a, 0)) is list)},
    ),
    "parseInt": JSFunction("parseInt", lambda *a: js_parse_int(_arg(a, 0), _arg(a, 1))),
    "parseFloat": JSFunction("parseFloat", lambda *a: js_parse_float(_arg(a, 0))),
    "isNaN": JSFunction("isNaN", _is_nan),
    "isFinite": JSFunction("isFinite", _is_finite),
    "count": JSFunction("count", _count),
    "all": JSFunction("all", _all),
    "any": JSFunction("any", _any),
    "undefined": UNDEFINED,
    "NaN": math.nan,
    "Infinity": math.inf,
}


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        return js_add(a, b)
    if op in ("&", "|", "^", "<<", ">>", ">>>"):
        xi = to_int32(a)
        if op == "&":
            return xi & to_int32(b)
        if op == "|":
            return to_int32(xi | to_int32(b))
        if op == "^":
            return xi ^ to_int32(b)
        shift = to_uint32(b) & 31
        if op == "<<":
            return to_int32(xi << shift)
        if op == ">>":
            return xi >> shift
        return to_uint32(a) >> shift
    x = float(to_number(a))
    y = float(to_number(b))
    if op == "-":
        return js_num(x - y)
    if op == "*":
        return js_num(x * y)
    if op == "/":
        if y == 0:
            if x != x or x == 0:
                return math.nan
            return math.inf if (x > 0) == (math.copysign(1, y) > 0) else -math.inf
        return js_num(x / y)
    if op == "%":
        if y == 0 or x != x or y != y or x in (math.inf, -math.inf):
            return math.nan
        if y in (math.inf, -math.inf):
            return js_num(x)
        return js_num(math.fmod(x, y))
    return js_num(_js_pow(x, y))  # "**"


def _binary(op: str, a: Any, b: Any) -> Any:
    if op == "==":
        return js_loose_eq(a, b)
    if op == "!=":
        return not js_loose_eq(a, b)
    if op == "===":
        return js_strict_eq(a, b)
    if op == "!==":
        return not js_strict_eq(a, b)
    if op in ("<", ">", "<=", ">="):
        return js_compare(op, a, b)
    return _arith(op, a, b)


def _compile(node: Node) -> Code:
    kind = node[0]
    if kind == "lit":
        value = node[2]
        return lambda ctx: value
    if kind == "ref":
        path = node[2]
        return lambda ctx: ctx[0](path)
    if kind == "id":
        name = node[2]

        def ident(ctx: Ctx) -> Any:
            names = ctx[1]
            if names is not None and name in names:
                return names[name]
            return GLOBALS.get(name, UNDEFINED)

        return ident
    if kind == "member":
        obj_c, prop_c = _compile(node[2]), _compile(node[3])
        return lambda ctx: get_member(obj_c(ctx), prop_c(ctx))
    if kind == "call":
        callee_c = _compile(node[2])
        arg_cs = [_compile(a) for a in node[3]]

        def call(ctx: Ctx) -> Any:
            fn = callee_c(ctx)
            if not isinstance(fn, JSFunction):
                raise JSRuntimeError("not a function")
            return fn.fn(*[a(ctx) for a in arg_cs])

        return call
    if kind == "unary":
        op, arg_c = node[2], _compile(node[3])
        if op == "!":
            return lambda ctx: not truthy(arg_c(ctx))
        if op == "-":
            return lambda ctx: js_num(-float(to_number(arg_c(ctx))))
        if op == "+":
            return lambda ctx: to_number(arg_c(ctx))
        return lambda ctx: ~to_int32(arg_c(ctx))
    if kind == "logic":
        op, left_c, right_c = node[2], _compile(node[3]), _compile(node[4])
        if op == "&&":

            def and_(ctx: Ctx) -> Any:
                left = left_c(ctx)
                return right_c(ctx) if truthy(left) else left

            return and_

        def or_(ctx: Ctx) -> Any:
            left = left_c(ctx)
            return left if truthy(left) else right_c(ctx)

        return or_
    if kind == "bin":
        op, left_c, right_c = node[2], _compile(node[3]), _compile(node[4])
        return lambda ctx: _binary(op, left_c(ctx), right_c(ctx))
    if kind == "cond":
        test_c, yes_c, no_c = _compile(node[2]), _compile(node[3]), _compile(node[4])
        return lambda ctx: yes_c(ctx) if truthy(test_c(ctx)) else no_c(ctx)
    if kind == "arr":
        item_cs = [_compile(a) for a in node[2]]
        return lambda ctx: [_array_item(c(ctx)) for c in item_cs]
    if kind == "obj":
        entry_cs = [(_compile(k), _compile(v)) for k, v in node[2]]

        def obj(ctx: Ctx) -> Any:
            out: dict[str, Any] = {}
            for key_c, val_c in entry_cs:
                key = to_string(key_c(ctx))
                if key in BLOCKED_PROPERTIES:
                    raise JSRuntimeError(f"property {key!r} is blocked")
                out[key] = val_c(ctx)
            return out

        return obj
    # "seq"
    item_cs = [_compile(a) for a in node[2]]

    def seq(ctx: Ctx) -> Any:
        result: Any = UNDEFINED
        for c in item_cs:
            result = c(ctx)
        return result

    return seq


def _array_item(value: Any) -> Any:
    return value


def _no_refs(path: str) -> Any:
    return UNDEFINED


@attrs.frozen
class Expression:
    """A compiled expression.

    ``refs`` are the reference paths of its ``$`` tokens, in source order, each minus its
    first ``$`` (``$$clock:tick`` gives ``$clock:tick``).
    """

    source: str
    refs: tuple[str, ...]
    empty: bool
    _code: Code = attrs.field(repr=False, eq=False)

    def evaluate(
        self,
        resolve: Callable[[str], Any] | None = None,
        names: Mapping[str, Any] | None = None,
        default: Any = True,
    ) -> Any:
        """Evaluate; ``resolve(path)`` reads references. Runtime errors give ``undefined``.

        An empty source evaluates to ``default``.
        """
        if self.empty:
            return default
        try:
            return self._code((resolve or _no_refs, names))
        except Exception:
            return UNDEFINED

    def test(self, resolve: Callable[[str], Any] | None = None, default: bool = True) -> bool:
        """Evaluate and apply JavaScript truthiness."""
        return truthy(self.evaluate(resolve, None, default))


def join_sources(source: Any, path: str = "expression") -> str:
    """Join a string or list of strings as ``(e1) && (e2)``; null and blank entries drop."""
    if source is None:
        return ""
    if type(source) is str:
        return source.strip()
    if type(source) is not list:
        raise ExpressionError(f"{path}: must be a string or a list of strings")
    parts: list[str] = []
    for i, item in enumerate(source):
        if item is None:
            continue
        if type(item) is not str:
            raise ExpressionError(f"{path}[{i}]: must be a string, got {type(item).__name__}")
        if item.strip():
            parts.append(item.strip())
    if len(parts) == 1:
        return parts[0]
    return " && ".join(f"({p})" for p in parts)


_CACHE: dict[str, Expression] = {}


def compile_expression(source: Any, path: str = "expression") -> Expression:
    """Parse and compile ``source`` (a string or list of strings, SPEC §1.5).

    Raises :class:`ExpressionError` with ``path`` in the message on a syntax error, a blocked
    property, or when a size/nesting limit is exceeded.
    """
    text = join_sources(source, path)
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    if len(text) > MAX_SOURCE:
        raise ExpressionError(f"{path}: expression longer than {MAX_SOURCE} characters")
    if text == "":
        return Expression(text, (), True, lambda ctx: UNDEFINED)
    try:
        parser = _Parser(text)
        tree = parser.program()
        code = _compile(tree)
    except ExpressionError as exc:
        raise ExpressionError(f"{path}: {exc} in {_clip(text)!r}") from None
    except RecursionError:
        raise ExpressionError(f"{path}: expression nested too deeply") from None
    expr = Expression(text, tuple(parser.refs), False, code)
    if len(_CACHE) < 10_000:
        _CACHE[text] = expr
    return expr


def compile_gate(sources: list[Any], path: str) -> Expression:
    """Compile the AND of several expression sources (``assert`` + ``ensure``)."""
    merged: list[str] = []
    for src in sources:
        text = join_sources(src, path)
        if text:
            merged.append(text)
    return compile_expression(merged, path)


def _clip(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
