"""Strict (un)structuring of event payloads with cattrs.

cattrs is lenient by default (``"1"`` becomes ``1``, a string becomes a list
of characters). An event log must not guess, so this converter accepts a value
only when its JSON type already matches the annotation, forbids unknown keys,
and turns cattrs' nested exceptions into one line that names the path.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.v import format_exception, transform_error

from .canonical import MAX_SAFE_INTEGER, CanonicalError, canonical_text
from .errors import InputError

__all__ = [
    "PayloadError",
    "converter",
    "flat_dumper",
    "flat_loader",
    "json_schema",
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
    """Statements checking ``var`` of ``kind`` and setting ``out`` to its JSON text."""
    if kind == "str":
        return [f"if {var}.__class__ is not str: raise _Slow", f"{out} = enc({var})"]
    if kind == "bool":
        return [f"if {var} is True: {out} = 'true'", f"elif {var} is False: {out} = 'false'",
                "else: raise _Slow"]
    if kind == "int":
        return [f"if {var}.__class__ is not int or not -{MAX_SAFE} <= {var} <= {MAX_SAFE}: "
                "raise _Slow", f"{out} = int_repr({var})"]
    return [  # float; an int is a valid number too (cattrs keeps it an int)
        f"if {var}.__class__ is float:",
        # repr() is the ECMAScript form for non-integral values in [1e-4, 1e16); an
        # integral value below 2**53 is written as that integer; the rest (integral at
        # or beyond 2**53, tiny, huge, NaN, infinite) goes to the general path
        f"    if {var}.is_integer():",
        f"        if not -{MAX_SAFE} <= {var} <= {MAX_SAFE}: raise _Slow",
        f"        {out} = int_repr(int({var}))",
        f"    elif 1e-4 <= abs({var}) < 1e16: {out} = float_repr({var})",
        "    else: raise _Slow",
        f"elif {var}.__class__ is int and -{MAX_SAFE} <= {var} <= {MAX_SAFE}:",
        f"    {out} = int_repr({var})",
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
    to its canonical text and ``var`` to what cattrs would unstructure it to (containers
    are copied one level, as the event must not share the caller's list or dict)."""
    text = f"{out} = jtext({var})"  # refuses what has no canonical form
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
    it does return equal ``canonical_bytes`` of the object it returns.
    """
    from json import encoder

    import attrs  # already imported by every payload class

    c_encode_basestring = getattr(encoder, "c_encode_basestring", None)
    if c_encode_basestring is None:  # pragma: no cover - CPython always has it
        return None
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
        var, out = f"v{k}", f"t{k}"
        step = [f"{var} = o.{f.name}"]
        if shape == "scalar":
            check = _leaf(leaf, var, out)
        elif shape == "json":
            check = _json_check(leaf, var, out)
        else:
            check = [f"if {var}.__class__ is not list: raise _Slow", "parts = []",
                     f"for x in {var}:", *_indent(_leaf(leaf, "x", "tx")),
                     "    parts.append(tx)",
                     f"{out} = '[' + ','.join(parts) + ']'",
                     f"{var} = list({var})"]  # a copy: the event must not share it
        if optional and leaf != "any":
            check = [f"if {var} is None: {out} = 'null'", "else:", *_indent(check)]
        lines += step + check
        items.append(f"{f.name!r}: {var}")
        members.append((f.name, out))
    members.sort()  # ASCII names: code-point order is RFC 8785's UTF-16 order
    text = ",".join(f'"{name}":{{{out}}}' for name, out in members)
    lines.append("d = {" + ", ".join(items) + "}")
    lines.append(f"return d, f'{{{{{text}}}}}'.encode('utf-8')")
    # a lone surrogate fails the UTF-8 encoding: the general path names it
    source = "\n".join(["def dump(o):", "    try:", *_indent(_indent(lines)),
                        "    except (_Slow, UnicodeEncodeError, CanonicalError):",
                        "        return None", ""])
    namespace: dict[str, Any] = {"_Slow": _Slow, "enc": c_encode_basestring,
                                 "int_repr": int.__repr__, "float_repr": float.__repr__,
                                 "jtext": canonical_text, "CanonicalError": CanonicalError}
    exec(source, namespace)
    dump = namespace["dump"]
    dump.source = source  # for reading, and for the tests
    compiled = _compiled_dumper(cls, fields)
    if compiled is not None:  # the same function, compiled
        compiled.source, compiled.python = source, dump
        return compiled
    return dump


def _compiled_dumper(cls: type, fields: Sequence[Any]) -> Any:
    """:func:`flat_dumper`'s function compiled, for a slotted class (any kind of field
    :func:`flat_dumper` takes: the free JSON ones through the compiled canonical encoder,
    which steps aside as :func:`cladelog.core.canonical.canonical_text` would not);
    else None."""
    from ._accel import speedups

    module, kinds = speedups(), _kind_codes(fields, _DUMPER_JSON_CODES)
    if module is None or kinds is None:
        return None
    names = tuple(f.name for f in fields)
    order = tuple(sorted(range(len(names)), key=lambda k: names[k]))
    try:
        return module.flat_dumper(cls, names, order, kinds)
    except TypeError:  # not slotted, say
        return None


# -- the replay hot path: payload instances from stored data ---------------------------------
#
# The mirror image of flat_dumper, for projections that take payload instances: for the
# same classes, a function generated once per class checks each member's exact JSON type
# as the strict converter above would, converts what it converts (an integer for a float
# field becomes a float; lists and objects are copied), and calls the class with keywords,
# so defaults, converters and validators run as they do under cattrs. Anything else (a
# missing or unknown member, a tuple, a number out of the safe range, a validator's
# refusal) makes it return None: the caller then takes the general path, which words the
# error or gives the same instance.


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


def _slot_maker(cls: type, fields: Sequence[Any]) -> Any:
    """A compiled constructor equivalent to ``cls(*values)`` (field order), or None.

    Only for a slotted attrs class whose generated ``__init__`` does nothing but store
    each argument: no validators, converters, pre/post-init hooks, hash cache or other
    slots, and ``cls.__new__`` is ``object.__new__``. Needs the optional compiled module
    (:mod:`cladelog.core._speedups`); ``CLADELOG_NO_SPEEDUPS`` turns it off.
    """
    from ._accel import speedups as _speedups

    speedups = _speedups()
    init = getattr(cls.__dict__.get("__init__"), "__code__", None)
    if speedups is None or init is None \
            or not init.co_filename.startswith("<attrs generated ") \
            or any(f.validator is not None or f.converter is not None for f in fields) \
            or hasattr(cls, "__attrs_pre_init__") or hasattr(cls, "__attrs_post_init__"):
        return None
    slots: set[str] = set()
    for klass in cls.__mro__[:-1]:
        own = klass.__dict__.get("__slots__")
        if own is None:
            return None
        own = [own] if isinstance(own, str) else list(own)
        if "__dict__" in own:
            return None
        slots.update(own)
    if slots - {"__weakref__"} != {f.name for f in fields}:
        return None
    try:
        return speedups.slot_maker(cls, tuple(f.name for f in fields))
    except TypeError:
        return None


def flat_loader(cls: type) -> Any:
    """A function ``json_object -> instance | None`` for the classes :func:`flat_dumper`
    covers (None for any other class).

    When the function returns an instance, :func:`structure` would have returned an
    equal one with members of the same types; when it returns None, :func:`structure`
    decides.
    """
    import attrs

    try:
        fields = attrs.fields(attrs.resolve_types(cls))
    except Exception:
        return None
    names = [f.name for f in fields]
    simple: list[str] = []  # exact-class checks of plain scalars, joined into one test
    checks: list[str] = []
    args, kwargs = [], []
    for k, f in enumerate(fields):
        kind = _field_kind(f.type)
        if kind is None or not f.init or not f.name.isidentifier() or not f.name.isascii() \
                or f.name.startswith("_") or getattr(f, "alias", f.name) != f.name:
            return None
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
    make = _slot_maker(cls, fields)
    if make is not None:  # the instance built by storing the checked values in its slots
        lines += [f"return make({', '.join(f'v{k}' for k in range(len(names)))})"]
    else:
        lines += ["try:", f"    return cls({', '.join(args + kwargs)})",
                  "except Exception:",  # a validator's or converter's refusal: cattrs words it
                  "    return None"]
    source = "\n".join(["def load(d):", *_indent(lines), ""])
    namespace: dict[str, Any] = {"_Slow": _Slow, "cls": cls, "make": make,
                                 "KEYS": tuple(names[k] for k in order)}
    exec(source, namespace)
    load = namespace["load"]
    load.source = source  # for reading, and for the tests
    if make is not None:
        compiled = _compiled_loader(cls, fields, order)
        if compiled is not None:  # the same function, compiled
            compiled.source, compiled.python = source, load
            return compiled
    return load


# what the compiled loader calls a field's kind (cladelog/core/_speedups.c)
_LEAF_CODES = {"str": 1, "int": 2, "bool": 3, "float": 4}
_SHAPE_LIST, _OPTIONAL = 16, 32
# free JSON: the loader takes ``Any`` as it is; the encoder writes every kind's canonical form
_LOADER_JSON_CODES = {"any": 5}
_DUMPER_JSON_CODES = {"any": 5, "dict": 6, "list": 7, "list_of_dicts": 8}


def _compiled_loader(cls: type, fields: Sequence[Any], order: list[int]) -> Any:
    """:func:`flat_loader`'s function compiled, where every field is a scalar, a list of
    scalars or free JSON taken as it is (``Any``), and the class is one
    :func:`_slot_maker` builds; else None."""
    from ._accel import speedups

    module, kinds = speedups(), _kind_codes(fields, _LOADER_JSON_CODES)
    if module is None or kinds is None:
        return None
    names = tuple(f.name for f in fields)
    try:
        return module.flat_loader(cls, names, tuple(names[k] for k in order), tuple(order),
                                  kinds)
    except TypeError:
        return None


def _kind_codes(fields: Sequence[Any], json_codes: dict[str, int]) -> tuple[int, ...] | None:
    """Each field's kind as the compiled module codes it, or None when one has no code (a
    kind of free JSON that ``json_codes`` does not list)."""
    kinds = []
    for f in fields:
        shape, leaf, optional = _field_kind(f.type)  # type: ignore[misc]  # checked before
        if shape == "json":
            if leaf not in json_codes:
                return None
            kinds.append(json_codes[leaf] | (_OPTIONAL if optional and leaf != "any" else 0))
            continue
        code = _LEAF_CODES[leaf] | (_SHAPE_LIST if shape == "list" else 0)
        kinds.append(code | (_OPTIONAL if optional else 0))
    return tuple(kinds)


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
