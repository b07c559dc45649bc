"""The canonical-facts barrier of SPEC §1.12: snap raw (model) values to typed facts.

Pure functions, no I/O. A fact schema (``prompt.facts`` of a concept) maps each fact key to
a spec:

- ``{"enum": [...], "synonyms": {member: [alias, ...]}, "default": x}``: the normalized raw
  value is looked up among the normalized members and aliases;
- ``{"grain": g}``: a number (parseFloat semantics) rounded to the grain, half toward +inf,
  then fixed to the grain's decimals;
- ``{"type": "int" | "number" | "bool" | "id" | "string"}`` (no type: ``string``);
- ``"from": "rawKey"`` reads another key of the raw reply; ``"default"`` replaces a miss.

A miss is counted only for ``enum``, ``grain``, ``int``, ``number`` and ``bool``: an
``id`` or ``string`` fact (or one with no type) whose raw value is absent, null or blank
gives its default (or null) and is not a miss, so it writes no ``<name>CanonMiss`` and a
provider cache may store the reply.

:func:`digest` is the facts digest. cladelog covers whole values (Q12): it is the hex
SHA-256 of the RFC 8785 canonical JSON, so nested changes change the digest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

import attrs
from cladelog.core.canonical import canonical_digest

from .errors import GraphEngineError
from .jsvalue import UNDEFINED, js_parse_float, js_round, to_string

__all__ = [
    "FactSpec",
    "FactsResult",
    "canon_facts",
    "canon_value",
    "compile_fact_schema",
    "digest",
    "norm_token",
]

_WS: Final = re.compile(r"\s+")
_TYPES: Final = frozenset({"int", "number", "bool", "id", "string"})
_TRUE: Final = frozenset({"true", "1", "yes", "y"})
_FALSE: Final = frozenset({"false", "0", "no", "n", ""})
_MISSING: Final = object()
_NEVER_MISS: Final = frozenset({"id", "string"})  # SPEC §1.12: default or null, no miss


def norm_token(value: Any) -> str:
    """``String(x)``, trimmed, lower-cased, inner whitespace collapsed to one space."""
    return _WS.sub(" ", to_string(value).strip()).lower()


@attrs.frozen
class FactSpec:
    """One compiled fact spec. ``lookup`` maps normalized tokens to ``(member, via_alias)``."""

    key: str
    kind: str  # enum | grain | int | number | bool | id | string
    source: str
    default: Any = None
    grain: float = 0.0
    decimals: int = 0
    lookup: Mapping[str, tuple[Any, bool]] = attrs.field(factory=dict)


@attrs.frozen
class FactsResult:
    """``facts`` holds every declared key; ``misses`` the keys that did not snap; ``synonyms``
    maps keys reached through an alias to that alias."""

    facts: dict[str, Any]
    misses: list[str]
    synonyms: dict[str, str]


def _decimals(grain: float) -> int:
    text = to_string(grain)
    if "e-" in text:
        mantissa, exp = text.split("e-")
        frac = mantissa.split(".")[1] if "." in mantissa else ""
        return len(frac) + int(exp)
    return len(text.split(".")[1]) if "." in text else 0


def _compile_enum(key: str, spec: Mapping[str, Any], where: str) -> dict[str, tuple[Any, bool]]:
    members = spec["enum"]
    if type(members) is not list or not members:
        raise GraphEngineError(f"{where}.enum: must be a non-empty list")
    lookup: dict[str, tuple[Any, bool]] = {}
    for i, member in enumerate(members):
        token = norm_token(member)
        if token in lookup:
            raise GraphEngineError(f"{where}.enum[{i}]: {member!r} normalizes like "
                                   f"{lookup[token][0]!r}")
        lookup[token] = (member, False)
    synonyms = spec.get("synonyms") or {}
    if type(synonyms) is not dict:
        raise GraphEngineError(f"{where}.synonyms: must be an object")
    by_token = {norm_token(m): m for m in members}
    for member_key, aliases in synonyms.items():
        if norm_token(member_key) not in by_token:
            raise GraphEngineError(f"{where}.synonyms.{member_key}: not a member of the enum")
        member = by_token[norm_token(member_key)]
        if type(aliases) is not list:
            raise GraphEngineError(f"{where}.synonyms.{member_key}: must be a list")
        for alias in aliases:
            token = norm_token(alias)
            found = lookup.get(token)
            if found is not None and found[0] != member:
                what = "a member" if not found[1] else f"an alias of {found[0]!r}"
                raise GraphEngineError(f"{where}.synonyms.{member_key}: alias {alias!r} "
                                       f"collides with {what}")
            if found is None:
                lookup[token] = (member, True)
    return lookup


def compile_fact_schema(schema: Any, where: str = "prompt.facts") -> dict[str, FactSpec]:
    """Check and compile a fact schema; raise :class:`GraphEngineError` naming the path."""
    if type(schema) is not dict:
        raise GraphEngineError(f"{where}: must be an object")
    return {key: _compile_spec(key, spec, f"{where}.{key}") for key, spec in schema.items()}


def _compile_spec(key: str, spec: Any, path: str) -> FactSpec:
    if type(spec) is not dict:
        raise GraphEngineError(f"{path}: must be an object")
    source = spec.get("from", key)
    if type(source) is not str:
        raise GraphEngineError(f"{path}.from: must be a string")
    default = spec.get("default")
    if "enum" in spec:
        return FactSpec(key, "enum", source, default, lookup=_compile_enum(key, spec, path))
    if "grain" in spec:
        grain = spec["grain"]
        if type(grain) not in (int, float) or not math.isfinite(grain) or grain <= 0:
            raise GraphEngineError(f"{path}.grain: must be a positive number, got {grain!r}")
        return FactSpec(key, "grain", source, default, grain=float(grain),
                        decimals=_decimals(grain))
    kind = spec.get("type", "string")
    if kind not in _TYPES:
        raise GraphEngineError(f"{path}.type: must be one of {sorted(_TYPES)}, got {kind!r}")
    return FactSpec(key, kind, source, default)


def _number(raw: Any) -> float | int | None:
    if type(raw) is bool or raw is None or raw is UNDEFINED or raw is _MISSING:
        return None
    n = raw if type(raw) in (int, float) else js_parse_float(to_string(raw))
    if n != n or n in (math.inf, -math.inf):
        return None
    return n


def _integral(x: float | int) -> float | int:
    if type(x) is float and x.is_integer() and abs(x) <= 2**53:
        return int(x)
    return x


def canon_value(raw: Any, spec: FactSpec | Mapping[str, Any]) -> tuple[Any, bool, bool]:
    """Snap one raw value: ``(value, missed, via_synonym)``; a miss gives the default.

    ``spec`` is compiled (a :class:`FactSpec`) or one raw spec (``{"type": "id"}``; a bad
    one raises :class:`GraphEngineError` naming ``spec``). Only ``enum``, ``grain``,
    ``int``, ``number`` and ``bool`` miss; ``id`` and ``string`` give the default (or null)
    for an absent, null or blank value without a miss (SPEC §1.12).
    """
    if not isinstance(spec, FactSpec):
        spec = _compile_spec("value", spec, "spec")
    kind = spec.kind
    if raw is _MISSING or raw is UNDEFINED or raw is None:
        return spec.default, kind not in _NEVER_MISS, False
    if kind == "enum":
        hit = spec.lookup.get(norm_token(raw))
        if hit is None:
            return spec.default, True, False
        return hit[0], False, hit[1]
    if kind == "bool":
        if type(raw) is bool:
            return raw, False, False
        token = norm_token(raw)
        if token in _TRUE:
            return True, False, False
        if token in _FALSE:
            return False, False, False
        return spec.default, True, False
    if kind in ("id", "string"):
        text = to_string(raw).strip()
        if kind == "string":
            text = _WS.sub(" ", text)
        return (text, False, False) if text else (spec.default, False, False)
    n = _number(raw)
    if n is None:
        return spec.default, True, False
    if kind == "int":
        return _integral(js_round(n)), False, False
    if kind == "number":
        return _integral(n), False, False
    snapped = js_round(n / spec.grain) * spec.grain
    fixed = round(snapped, spec.decimals)
    return _integral(fixed) if spec.decimals == 0 else _integral(float(fixed)), False, False


def canon_facts(raw: Any, schema: Mapping[str, FactSpec] | Any) -> FactsResult:
    """Snap a raw reply (an object) to the schema; every declared key is in ``facts``.

    ``schema`` is compiled (:func:`compile_fact_schema`) or raw. A raw reply that is not an
    object misses every key.
    """
    specs = schema if _is_compiled(schema) else compile_fact_schema(schema)
    source = raw if type(raw) is dict else {}
    facts: dict[str, Any] = {}
    misses: list[str] = []
    synonyms: dict[str, str] = {}
    for key, spec in specs.items():
        value, missed, via = canon_value(source.get(spec.source, _MISSING), spec)
        facts[key] = value
        if missed:
            misses.append(key)
        if via:
            synonyms[key] = norm_token(source.get(spec.source))
    return FactsResult(facts, misses, synonyms)


def _is_compiled(schema: Any) -> bool:
    return isinstance(schema, Mapping) and all(isinstance(v, FactSpec) for v in schema.values())


def digest(value: Any) -> str:
    """The facts digest: hex SHA-256 of the canonical JSON of the whole value (Q12)."""
    return canonical_digest(value)
