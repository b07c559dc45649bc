"""Strict (un)structuring of event payloads with cattrs.

cattrs is lenient by default (``"1"`` becomes ``1``, a string becomes a list
of characters). An event log must not guess, so this converter accepts a value
only when its JSON type already matches the annotation, forbids unknown keys,
and turns cattrs' nested exceptions into one line that names the path.
"""

from __future__ import annotations

import math
import typing
from typing import Any, TypeVar

import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.v import format_exception, transform_error

from .errors import InputError

__all__ = ["PayloadError", "converter", "structure", "unstructure"]

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


def unstructure(obj: Any) -> Any:
    """Unstructure an attrs payload into plain JSON values."""
    return converter.unstructure(obj)
