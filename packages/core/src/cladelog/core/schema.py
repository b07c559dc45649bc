"""Strict (un)structuring of event payloads with cattrs.

cattrs is lenient by default (``"1"`` becomes ``1``, a string becomes a list
of characters). An event log must not guess, so this converter accepts a value
only when its JSON type already matches the annotation, forbids unknown keys,
and turns cattrs' nested exceptions into one line that names the path.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.v import format_exception, transform_error

from .canonical import MAX_SAFE_INTEGER, CanonicalError, canonical_bytes
from .errors import InputError

__all__ = [
    "PayloadError",
    "converter",
    "flat_dumper",
    "flat_loader",
    "json_schema",
    "page_loader",
    "structure",
    "unstructure",
    "unstructure_checked",
]

T = TypeVar("T")


class PayloadError(InputError):
    """A payload does not match its class; the message names the field."""


class _HookError(ValueError):
    """A type mismatch found by this module's strict hooks (worded by cattrs)."""


def _strict_int(value: Any, _: type) -> int:
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def _strict_float(value: Any, _: type) -> float:
    if type(value) not in (int, float):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise _HookError("expected a finite number")
    return float(value)


def _strict_str(value: Any, _: type) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _strict_bool(value: Any, _: type) -> bool:
    if type(value) is not bool:
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def _is_list(tp: Any) -> bool:
    return (typing.get_origin(tp) or tp) is list


def _is_homogenous_tuple(tp: Any) -> bool:
    args = typing.get_args(tp)
    return (typing.get_origin(tp) or tp) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_dict(tp: Any) -> bool:
    return (typing.get_origin(tp) or tp) is dict


def _require(kind: type, label: str, inner: Any) -> Any:
    kinds = (list, tuple) if kind is list else (kind,)

    def hook(value: Any, tp: Any) -> Any:
        if type(value) not in kinds:
            raise TypeError(f"expected {label}, got {type(value).__name__}")
        return inner(value, tp)

    return hook


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(float, _strict_float)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(bool, _strict_bool)
    conv.register_structure_hook_factory(
        _is_list, lambda tp: _require(list, "a list", list_structure_factory(tp, conv))
    )
    conv.register_structure_hook_factory(
        _is_homogenous_tuple,
        lambda tp: _require(list, "a list", homogenous_tuple_structure_factory(tp, conv)),
    )
    conv.register_structure_hook_factory(
        _is_dict, lambda tp: _require(dict, "an object", mapping_structure_factory(tp, conv))
    )
    return conv


converter = _make_converter()


def _format(exc: BaseException, tp: type | None) -> str:
    """cattrs' wording, plus the message a payload class's own validator gave."""
    text = format_exception(exc, tp)
    if (isinstance(exc, ValueError) and not isinstance(exc, _HookError) and exc.args
            and isinstance(exc.args[0], str) and exc.args[0]):
        text = f"{text} ({exc.args[0]})"
    return text


def structure(data: Any, cls: type[T], *, path: str = "data") -> T:
    """Structure ``data`` into ``cls`` strictly, or raise :class:`PayloadError`."""
    if not isinstance(data, dict):
        raise PayloadError(f"{path}: expected an object, got {type(data).__name__}")
    try:
        return converter.structure(data, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError) as exc:
        if isinstance(exc, cattrs.BaseValidationError):
            messages = transform_error(exc, path=path, format_exception=_format)
            first = messages[0] if messages else str(exc)
            problem, _, where = first.rpartition(" @ ")
            if problem.startswith("unknown error"):
                problem = "has the wrong type" + problem[len("unknown error"):]
            raise PayloadError(f"{where or path}: {problem or first}") from None
        raise PayloadError(f"{path}: {exc}") from None


def unstructure_checked(obj: Any, cls: type, *, path: str = "data") -> Any:
    """Unstructure an instance of ``cls``; a field cattrs cannot convert (a number where
    a list belongs, say) raises :class:`PayloadError` naming that field."""
    try:
        return converter.unstructure(obj, cls)
    except Exception as exc:
        import attrs

        for f in attrs.fields(cls):
            try:
                converter.unstructure(getattr(obj, f.name), f.type)
            except Exception:
                raise PayloadError(f"{path}.{f.name}: cannot be converted to JSON "
                                   f"({type(exc).__name__}: {exc})") from None
        raise PayloadError(f"{path}: cannot be converted to JSON ({exc})") from None


def unstructure(obj: Any) -> Any:
    """Unstructure an attrs payload into plain JSON values."""
    return converter.unstructure(obj)


# -- the append hot path: payloads of plain classes --------------------------------------------
#
# Structuring a payload with cattrs, unstructuring it again and scanning the result for its
# canonical form costs more than the rest of an append. For a payload class whose fields are
# JSON scalars (str, int, float, bool, optionally None), lists of them, or free JSON (Any,
# dict[str, Any], list[Any], list[dict[str, Any]]), a function generated once per class
# reads the fields, checks each value's exact type, and writes the canonical JSON text
# directly (members in sorted order, known at generation time; free JSON through the
# canonical encoder). Anything it is not sure about (a subclass, a float whose shortest
# form differs between Python and ECMAScript, a field of another type) makes it return
# None, and the caller takes the general path, which behaves exactly as before.

_SCALARS = {str: "str", int: "int", float: "float", bool: "bool"}
MAX_SAFE = MAX_SAFE_INTEGER


class _Slow(Exception):
    """The instance needs the general path."""


def _leaf(kind: str, var: str, out: str) -> list[str]:
    """Statements checking ``var`` of ``kind`` and setting ``out`` to the value orjson
    writes in canonical form (the value itself, or the integer of an integral float)."""
    if kind == "str":  # orjson refuses a lone surrogate: the general path names it
        return [f"if {var}.__class__ is not str: raise _Slow", f"{out} = {var}"]
    if kind == "bool":
        return [f"if {var} is not True and {var} is not False: raise _Slow", f"{out} = {var}"]
    if kind == "int":
        return [f"if {var}.__class__ is not int or not -{MAX_SAFE} <= {var} <= {MAX_SAFE}: "
                "raise _Slow", f"{out} = {var}"]
    return [  # float; an int is a valid number too (cattrs keeps it an int)
        f"if {var}.__class__ is float:",
        # orjson writes the ECMAScript form for non-integral values in [1e-4, 1e16) (the
        # canonical tests hold it to the pure encoder); an integral value below 2**53 is
        # written as that integer; the rest (integral at or beyond 2**53, tiny, huge, NaN,
        # infinite) goes to the general path
        f"    if {var}.is_integer():",
        f"        if not -{MAX_SAFE} <= {var} <= {MAX_SAFE}: raise _Slow",
        f"        {out} = int({var})",
        f"    elif 1e-4 <= abs({var}) < 1e16: {out} = {var}",
        "    else: raise _Slow",
        f"elif {var}.__class__ is int and -{MAX_SAFE} <= {var} <= {MAX_SAFE}:",
        f"    {out} = {var}",
        "else: raise _Slow",
    ]


_FREE_DICT = dict[str, Any]


def _field_kind(tp: Any) -> tuple[str, str, bool] | None:
    """(shape, leaf kind, optional) for a supported annotation, else None. Shapes:
    ``scalar``, ``list`` (of scalars) and ``json`` (free JSON: ``any``, ``dict``,
    ``list`` or ``list_of_dicts``)."""
    optional = False
    if tp is Any:
        return "json", "any", False
    args = typing.get_args(tp)
    if args and type(None) in args and len(args) == 2:
        optional = True
        tp = next(a for a in args if a is not type(None))
    if tp in _SCALARS:
        return "scalar", _SCALARS[tp], optional
    if tp == _FREE_DICT:
        return "json", "dict", optional
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp) or (None,)
        if item in _SCALARS:
            return "list", _SCALARS[item], optional
        if item is Any:
            return "json", "list", optional
        if item == _FREE_DICT:
            return "json", "list_of_dicts", optional
    return None


def _json_check(kind: str, var: str, out: str) -> list[str]:
    """Statements checking free JSON ``var`` as cattrs would structure it, setting ``out``
    to its canonical bytes (an ``orjson.Fragment``) and ``var`` to what cattrs would
    unstructure it to (containers are copied one level, as the event must not share the
    caller's list or dict)."""
    text = f"{out} = fragment(cbytes({var}))"  # refuses what has no canonical form
    if kind == "any":
        return [text]
    if kind == "dict":
        return [f"if {var}.__class__ is not dict: raise _Slow", text, f"{var} = dict({var})"]
    check = [f"if {var}.__class__ is not list and {var}.__class__ is not tuple: raise _Slow"]
    if kind == "list_of_dicts":
        check.append(f"if any(x.__class__ is not dict for x in {var}): raise _Slow")
    return [*check, text, f"{var} = list({var})"]


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def flat_dumper(cls: type) -> Any:
    """A function ``instance -> (json_object, canonical_bytes) | None`` for an attrs class
    whose fields are JSON scalars, lists of them or free JSON (see above), or None for
    any other class.

    The function returns None for an instance it cannot encode exactly; the bytes
    it does return equal ``canonical_bytes`` of the object it returns. They are orjson's
    bytes of an object of the checked values, its members inserted in canonical order.
    """
    import attrs  # already imported by every payload class
    import orjson

    try:
        fields = attrs.fields(attrs.resolve_types(cls))
    except Exception:  # unresolvable annotations: the general path copes or reports
        return None
    lines: list[str] = []
    items, members = [], []
    for k, f in enumerate(fields):
        kind = _field_kind(f.type)
        # cattrs leaves init=False fields out and keys private ones by name: such
        # classes take the general path rather than a second set of rules here
        if kind is None or not f.init or not f.name.isidentifier() or not f.name.isascii() \
                or f.name.startswith("_"):
            return None
        shape, leaf, optional = kind
        var, out = f"v{k}", f"e{k}"
        step = [f"{var} = o.{f.name}"]
        if shape == "scalar":
            check = _leaf(leaf, var, out)
        elif shape == "json":
            check = _json_check(leaf, var, out)
        elif leaf == "float":  # integral floats become integers in the encoded list
            check = [f"if {var}.__class__ is not list: raise _Slow", f"{out} = []",
                     f"for x in {var}:", *_indent(_leaf(leaf, "x", "ex")),
                     f"    {out}.append(ex)",
                     f"{var} = list({var})"]  # a copy: the event must not share it
        else:
            check = [f"if {var}.__class__ is not list: raise _Slow",
                     f"for x in {var}:", *_indent(_leaf(leaf, "x", "ex")),
                     f"{var} = {out} = list({var})"]
        if optional and leaf != "any":
            check = [f"if {var} is None: {out} = None", "else:", *_indent(check)]
        lines += step + check
        items.append(f"{f.name!r}: {var}")
        members.append((f.name, out))
    members.sort()  # ASCII names: code-point order is RFC 8785's UTF-16 order
    lines.append("d = {" + ", ".join(items) + "}")
    lines.append("return d, dumps({" + ", ".join(f"{name!r}: {out}" for name, out in members)
                 + "})")
    source = "\n".join(["def dump(o):", "    try:", *_indent(_indent(lines)),
                        "    except (_Slow, JSONEncodeError, CanonicalError):",
                        "        return None", ""])
    namespace: dict[str, Any] = {"_Slow": _Slow, "dumps": orjson.dumps,
                                 "fragment": orjson.Fragment, "cbytes": canonical_bytes,
                                 "JSONEncodeError": orjson.JSONEncodeError,
                                 "CanonicalError": CanonicalError}
    exec(source, namespace)
    dump = namespace["dump"]
    dump.source = source  # for reading, and for the tests
    return dump


# -- the replay hot path: payload instances from stored data ---------------------------------
#
# The mirror image of flat_dumper, for projections that take payload instances: for the
# same classes, functions generated once per class from the same reading of the fields
# (_field_kind) check each member's exact JSON type as the strict converter above would,
# convert what it converts (an integer for a float field becomes a float; lists and
# objects are copied unless the caller hands them over), and build the instance. Anything
# else (a missing or unknown member, a tuple, a number out of the safe range, a
# validator's refusal) makes them return None: the caller then takes the general path,
# which words the error or gives the same instance.
#
# There are two forms, both generated from that one reading and tested equal to each other
# and to the general path: page_loader takes a page of objects (the replay read decodes a
# page of events at once) and checks a column at a time, so that the loops run in C
# (``map``, ``zip``, sets of types); it builds the instances by calling the class, so that
# defaults, converters and validators run as under cattrs, or, when attrs generated an
# ``__init__`` that does nothing but store each argument in its slot (read from attrs' own
# generated source), by storing the columns in the slots. flat_loader takes one object
# (a page of one costs the page's fixed overhead: ~4x the time of one object) and is the
# page's fallback, object by object, when the page loader does not vouch for every one.


def _stores_only(cls: type, names: list[str]) -> bool:
    """Whether ``cls.__init__`` is attrs' generated one and only stores each argument in
    its slot, in field order (then storing the slots directly builds the same instance)."""
    import linecache
    import types

    try:
        code = cls.__init__.__code__  # type: ignore[misc]
        if not code.co_filename.startswith("<attrs generated"):
            return False
        if not all(type(getattr(cls, n, None)) is types.MemberDescriptorType for n in names):
            return False
        lines = linecache.getlines(code.co_filename)[code.co_firstlineno:]
    except (AttributeError, TypeError):
        return False
    body = []
    for line in lines:
        if not line.startswith((" ", "\t")):
            break
        body.append(line.strip())
    while body and not body[-1]:
        body.pop()
    if body == ["_setattr = _cached_setattr_get(self)", *[f"_setattr({n!r}, {n})" for n in names]]:
        return True  # object.__setattr__, whatever the class's own __setattr__ does
    # plain assignments go through the class's __setattr__: only object's stores the slot
    plain = cls.__setattr__ is object.__setattr__  # type: ignore[comparison-overlap]
    return plain and body == [f"self.{n} = {n}" for n in names]


_NONE = type(None)


def _page_check(shape: str, leaf: str, optional: bool, var: str) -> list[str]:
    """Statements checking column ``var`` (a tuple of one field's values) as the strict
    converter would check each value, and converting or copying it (``owned``: the
    caller hands the containers over, so they need no copy)."""
    kinds = {"str": "str", "int": "int", "bool": "bool", "float": "float"}
    opt = ", NONE" if optional else ""
    present = f"filter(None, {var})" if optional else var  # the values that are not None
    if shape == "scalar" and leaf != "float":
        return [f"if not {{*map(type, {var})}} <= {{{kinds[leaf]}{opt}}}: return None"]
    if shape == "scalar":  # float: ints in the safe range become floats; finite
        return [f"t = {{*map(type, {var})}}",
                f"if not t <= {{float{opt}}}:",
                f"    if not t <= {{float, int{opt}}}: return None",
                f"    {var} = list(map(as_float, {var}))",
                f"if not all(map(isfinite, {present})): return None"]
    copy = (f"{var} = [x if x is None else {{}}(x) for x in {var}]" if optional
            else f"{var} = list(map({{}}, {var}))")
    if shape == "json" and leaf == "any":
        return []
    container = "dict" if leaf == "dict" else "list"
    lines = [f"if not {{*map(type, {var})}} <= {{{container}{opt}}}: return None"]
    items = f"chain.from_iterable({present})"
    if shape == "list" and leaf == "float":
        return [*lines,
                f"t = {{*map(type, {items})}}",
                "if not t <= {float}:",
                "    if not t <= {float, int}: return None",
                f"    {copy.format('list_as_float')}",
                f"elif not owned: {copy.format('list')}",
                f"if not all(map(isfinite, chain.from_iterable({present}))): return None"]
    if shape == "list":
        return [*lines, f"if not {{*map(type, {items})}} <= {{{kinds[leaf]}}}: return None",
                f"if not owned: {copy.format('list')}"]
    if leaf == "dict":
        return [*lines, f"if not {{*map(type, {items})}} <= {{str}}: return None",
                f"if not owned: {copy.format('dict')}"]
    if leaf == "list":
        return [*lines, f"if not owned: {copy.format('list')}"]
    return [*lines,  # list_of_dicts
            f"inner = list({items})",
            "if not {*map(type, inner)} <= {dict}: return None",
            "if not {*map(type, chain.from_iterable(inner))} <= {str}: return None",
            f"if not owned: {copy.format('dicts_copy')}"]


def _as_float(x: Any) -> Any:
    """An integer in the safe range as a float (others as they are; None stays None)."""
    if x.__class__ is int:
        if not -MAX_SAFE <= x <= MAX_SAFE:
            raise _Slow
        return float(x)
    return x


def _list_as_float(items: list[Any]) -> list[Any]:
    return list(map(_as_float, items))


def _dicts_copy(items: list[Any]) -> list[Any]:
    return list(map(dict, items))


def _generated_fields(cls: type) -> list[tuple[Any, tuple[str, str, bool]]] | None:
    """The fields of an attrs class with their :func:`_field_kind`, when a generated
    loader (:func:`flat_loader`, :func:`page_loader`) can build every one by name; None
    when one cannot be (the class is then loaded by :func:`structure`)."""
    import attrs

    try:
        fields = attrs.fields(attrs.resolve_types(cls))
    except Exception:
        return None
    out = []
    for f in fields:
        kind = _field_kind(f.type)
        if kind is None or not f.init or not f.name.isidentifier() or not f.name.isascii() \
                or f.name.startswith("_") or getattr(f, "alias", f.name) != f.name:
            return None
        out.append((f, kind))
    return out


def page_loader(cls: type) -> Any:
    """A function ``(json_objects, owned) -> instances | None`` for the classes
    :func:`flat_dumper` covers (None for any other class): the instances of a sequence of
    JSON objects, or None when it does not vouch for every one of them.

    When it returns instances, :func:`structure` would have returned equal ones with
    members of the same types. With ``owned`` true the caller hands the objects over
    (the replay read parsed them for this call): the instances may keep their lists and
    objects, which are otherwise copied as cattrs copies them.
    """
    got = _generated_fields(cls)
    if got is None:
        return None
    names = [f.name for f, _ in got]
    checks: list[str] = []
    args, kwargs = [], []
    for k, (f, kind) in enumerate(got):
        var = f"c{k}"
        (kwargs.append(f"{f.name}=a{k}") if f.kw_only else args.append(f"a{k}"))
        checks += _page_check(*kind, var)
    cols = [f"c{k}" for k in range(len(names))]
    lines = [
        "if not ds: return []",
        f"if {{*map(type, ds)}} != {{dict}} or {{*map(len, ds)}} != {{{len(names)}}}:",
        "    return None",
    ]
    if len(names) == 1:
        lines += ["try:", "    c0 = list(map(GET, ds))", "except KeyError:", "    return None"]
    elif names:
        lines += ["try:", f"    {', '.join(cols)} = zip(*map(GET, ds))",
                  "except KeyError:", "    return None"]
    if checks:
        lines += ["try:", *_indent(checks), "except _Slow:", "    return None"]
    setters: list[Any] = []
    if names and _stores_only(cls, names):
        setters = [getattr(cls, n).__set__ for n in names]
        lines += ["objs = list(map(new, repeat(cls, len(ds))))",
                  *[f"consume(map(SET[{k}], objs, c{k}), 0)" for k in range(len(names))],
                  "return objs"]
    else:
        each = ", ".join(f"a{k}" for k in range(len(names))) or "_"
        source_of = f"zip({', '.join(cols)})" if names else "ds"
        build = (f"list(map(cls, {', '.join(cols)}))" if names and not kwargs else
                 f"[cls({', '.join(args + kwargs)}) for {each} in {source_of}]")
        lines += ["try:", f"    return {build}",
                  "except Exception:",  # a validator's or converter's refusal: cattrs words it
                  "    return None"]
    source = "\n".join(["def many(ds, owned):", *_indent(lines), ""])
    import itertools
    import operator
    from collections import deque

    namespace: dict[str, Any] = {
        "_Slow": _Slow, "cls": cls, "NONE": _NONE, "SET": setters, "new": object.__new__,
        "repeat": itertools.repeat, "chain": itertools.chain, "consume": deque,
        "isfinite": math.isfinite, "as_float": _as_float, "list_as_float": _list_as_float,
        "dicts_copy": _dicts_copy, "GET": operator.itemgetter(*names) if names else None,
    }
    exec(source, namespace)
    many = namespace["many"]
    many.source = source  # for reading, and for the tests
    return many


def _load_leaf(kind: str, var: str) -> list[str]:
    """Statements checking ``var`` of scalar ``kind`` (converting an int to a float)."""
    if kind == "str":
        return [f"if {var}.__class__ is not str: raise _Slow"]
    if kind == "bool":
        return [f"if {var}.__class__ is not bool: raise _Slow"]
    if kind == "int":
        return [f"if {var}.__class__ is not int: raise _Slow"]
    return [
        f"if {var}.__class__ is float:",
        f"    if {var} - {var} != 0.0: raise _Slow",  # NaN or infinite
        f"elif {var}.__class__ is int and -{MAX_SAFE} <= {var} <= {MAX_SAFE}:",
        f"    {var} = float({var})",
        "else: raise _Slow",
    ]


def _load_json(kind: str, var: str) -> list[str]:
    """Statements checking free JSON ``var`` and copying its container as cattrs does."""
    if kind == "any":
        return []
    str_keys = "if any(k.__class__ is not str for k in {0}): raise _Slow"
    if kind == "dict":
        return [f"if {var}.__class__ is not dict: raise _Slow", str_keys.format(var),
                f"{var} = dict({var})"]
    lines = [f"if {var}.__class__ is not list: raise _Slow"]
    if kind == "list_of_dicts":
        lines += ["for x in " + var + ":",
                  "    if x.__class__ is not dict: raise _Slow",
                  "    " + str_keys.format("x"),
                  f"{var} = [dict(x) for x in {var}]"]
    else:
        lines.append(f"{var} = list({var})")
    return lines


def flat_loader(cls: type, or_else: Callable[[Any], Any] | None = None) -> Any:
    """A function ``json_object -> instance | None`` for the classes :func:`flat_dumper`
    covers (None for any other class).

    When the function returns an instance, :func:`structure` would have returned an
    equal one with members of the same types; when it returns None, :func:`structure`
    decides. With ``or_else``, the function returns ``or_else(json_object)`` instead of
    None (one call per event fewer on the replay path).

    Its attribute ``many(json_objects, owned=False)`` loads a page: through
    :func:`page_loader`'s function when that vouches for the page, else object by object
    through this function.
    """
    got = _generated_fields(cls)
    if got is None:
        return None
    names = [f.name for f, _ in got]
    simple: list[str] = []  # exact-class checks of plain scalars, joined into one test
    checks: list[str] = []
    args, kwargs = [], []
    for k, (f, kind) in enumerate(got):
        shape, leaf, optional = kind
        var = f"v{k}"
        (kwargs.append(f"{f.name}={var}") if f.kw_only else args.append(var))
        if shape == "scalar" and leaf != "float" and not optional:
            simple.append(f"{var}.__class__ is not {leaf}")
            continue
        if shape == "scalar":
            check = _load_leaf(leaf, var)
        elif shape == "json":
            check = _load_json(leaf, var)
        else:
            item = _load_leaf(leaf, "x")
            check = [f"if {var}.__class__ is not list: raise _Slow"]
            if leaf == "float":
                check += ["items = []", f"for x in {var}:", *_indent(item),
                          "    items.append(x)", f"{var} = items"]
            else:
                check += [f"for x in {var}:", *_indent(item), f"{var} = list({var})"]
        if optional and leaf != "any" and check:
            check = [f"if {var} is not None:", *_indent(check)]
        checks += check
    order = sorted(range(len(names)), key=lambda k: names[k])  # ASCII: canonical order
    lines = [
        "if d.__class__ is not dict: return None",
        # stored data is canonical: its members come in sorted order, so one comparison
        # of the keys replaces a lookup per member
        "if tuple(d) == KEYS:",
        f"    {', '.join(f'v{k}' for k in order)}{',' if len(order) == 1 else ''} = d.values()",
        f"elif len(d) == {len(names)}:",
        "    try:",
        *[f"        v{k} = d[{name!r}]" for k, name in enumerate(names)],
        "    except KeyError:",
        "        return None",
        "else:",
        "    return None",
    ]
    if not names:
        lines = ["if d.__class__ is not dict or d: return None"]
    if simple:
        lines += [f"if {' or '.join(simple)}: return None"]
    if checks:
        lines += ["try:", *_indent(checks), "except _Slow:", "    return None"]
    lines += ["try:", f"    return cls({', '.join(args + kwargs)})",
              "except Exception:",  # a validator's or converter's refusal: cattrs words it
              "    return None"]
    if or_else is not None:
        lines = [line.replace("return None", "return or_else(d)") for line in lines]
    source = "\n".join(["def load(d):", *_indent(lines), ""])
    namespace: dict[str, Any] = {"_Slow": _Slow, "cls": cls, "or_else": or_else,
                                 "KEYS": tuple(names[k] for k in order)}
    exec(source, namespace)
    load = namespace["load"]
    load.source = source  # for reading, and for the tests
    many = page_loader(cls)

    def load_many(ds: Sequence[Any], owned: bool = False) -> list[Any]:
        got = many(ds, owned) if many is not None else None
        if got is not None:
            return got  # type: ignore[no-any-return]
        return list(map(load, ds))  # each object on its own: the general path words errors

    load.many = load_many
    return load


# -- JSON Schema ---------------------------------------------------------------------------

#: the JSON Schema dialect :func:`json_schema` writes
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(cls: type) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the payloads :func:`structure` accepts for the
    attrs class ``cls``: the same rules, read from the same annotations. Integers must be
    JSON integers within the canonical encoding's safe range, numbers finite, objects
    carry no member their class does not name (``additionalProperties: false``), and a
    member is required when its field has no default. A validator a payload class runs
    itself (a range, a pattern) is not expressed: the schema states the shape."""
    doc = _schema_of(cls, frozenset())
    return {"$schema": JSON_SCHEMA_DIALECT, "title": cls.__name__, **doc}


_JSON_SCALARS: dict[Any, dict[str, Any]] = {
    int: {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}


def _schema_of(tp: Any, seen: frozenset[type]) -> dict[str, Any]:
    import attrs

    if tp is Any or tp is object:
        return {}
    if tp in _JSON_SCALARS:
        return dict(_JSON_SCALARS[tp])
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return {"anyOf": [_schema_of(a, seen) for a in args]}
    if (origin or tp) in (list, tuple, Sequence) or origin is typing.Sequence:
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {"type": "array", "prefixItems": [_schema_of(a, seen) for a in args],
                    "items": False}
        return {"type": "array", **({"items": _schema_of(args[0], seen)} if args else {})}
    if (origin or tp) is dict:
        value = args[1] if len(args) == 2 else Any
        return {"type": "object", "additionalProperties": _schema_of(value, seen)}
    if isinstance(tp, type) and attrs.has(tp):
        if tp in seen:  # a class that holds itself: say "an object", not loop
            return {"type": "object"}
        try:
            hints = typing.get_type_hints(tp)
        except Exception:  # an annotation that does not resolve: its field is any JSON
            hints = {}
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(tp):
            properties[field.name] = _schema_of(hints.get(field.name, Any), seen | {tp})
            if field.default is attrs.NOTHING:
                required.append(field.name)
        out: dict[str, Any] = {"type": "object", "properties": properties,
                               "additionalProperties": False}
        if required:
            out["required"] = required
        return out
    return {}  # a type the strict converter structures by its own hook: any JSON value
