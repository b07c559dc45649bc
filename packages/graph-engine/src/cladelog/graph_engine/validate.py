"""Static checks of a concept tree (the structural part of SPEC §1.14 ``validateConceptTree``).

:func:`validate_tree` never raises on a bad tree: it returns every problem it finds as an
:class:`Issue` (``errors`` and ``warnings``). A tree the engine cannot load at all gives one
``load`` error naming the path. Checks: the loader's own errors and warnings (Q2 method
calls, ``Node``/``Segment`` marker names), concepts without ``_name`` (``no-name``),
providers outside a palette (``provider-not-in-palette``, an error under ``strict``),
references to prose facts (``prose-dependency``), invalid ``prompt.facts`` synonym rings
(``synonym-ring``), and bare references to collection keys (``aggregating-dependency``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any, Final

import attrs

from .errors import GraphEngineError

__all__ = ["Issue", "ValidationReport", "references", "validate_tree"]

_TOKEN: Final = re.compile(r"\$\$?[A-Za-z_][\w.:$]*", re.ASCII)
COLLECTION_KEYS: Final = ("expandedInto", "answeredBy", "children", "steps")


@attrs.frozen
class Issue:
    """One finding: the concept id (or ``tree``), a kind and a one-line message."""

    concept: str
    kind: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"concept": self.concept, "kind": self.kind, "message": self.message}


@attrs.frozen
class ValidationReport:
    """``errors`` make a tree unusable or wrong; ``warnings`` are likely mistakes."""

    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "errors": [i.to_json() for i in self.errors],
                "warnings": [i.to_json() for i in self.warnings]}


def _as_list(value: Any) -> list[str]:
    if type(value) is str:
        return [value]
    if type(value) is list:
        return [v for v in value if type(v) is str and v.strip()]
    return []


def references(schema: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """``(path, is_require)`` of every require item and every ensure/assert reference token.

    Expression tokens lose their first ``$`` (``$$clock:tick`` gives ``$clock:tick``).
    """
    out: list[tuple[str, bool]] = [(r, True) for r in _as_list(schema.get("require"))]
    for field in ("ensure", "assert"):
        for text in _as_list(schema.get(field)):
            out.extend((tok[1:], False) for tok in _TOKEN.findall(text))
    return out


def ref_key(path: str) -> tuple[str, bool]:
    """``refKeyOf``: strip leading ``$``, keep what follows the last ``:``, split on ``.``."""
    tail = path.lstrip("$").rsplit(":", 1)[-1]
    parts = tail.split(".")
    return parts[0], len(parts) > 1


def _walk(node: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    kids = node.get("childConcepts")
    if type(kids) is not dict:
        return
    for key, child in kids.items():
        if type(child) is dict:
            yield str(key), child
            yield from _walk(child)


def _provider_name(value: Any) -> str | None:
    if type(value) is str:
        return value
    if type(value) is list and value and type(value[0]) is str:
        return str(value[0])
    return None


def validate_tree(
    raw: Any,
    *,
    palette: Collection[str] | None = None,
    strict: bool = False,
    collection_keys: Collection[str] = COLLECTION_KEYS,
) -> ValidationReport:
    """Check a raw root container; see the module docstring for the checks."""
    from .canon import compile_fact_schema
    from .tree import build_tree

    errors: list[Issue] = []
    warnings: list[Issue] = []
    try:
        compiled = build_tree(raw, None)
    except GraphEngineError as exc:
        return ValidationReport((Issue("tree", "load", str(exc)),), ())
    except RecursionError:
        return ValidationReport((Issue("tree", "load", "tree: nested too deeply"),), ())
    for text in compiled.warnings:
        kind = "engine-marker-name" if "treated as cast" in text else "method-in-token"
        warnings.append(Issue(text.split(":", 1)[0].removeprefix("tree."), kind, text))
    concepts = list(_walk(raw))
    prose: dict[str, str] = {}
    for cid, schema in concepts:
        name = schema.get("_name")
        prompt = schema.get("prompt")
        if type(name) is str and type(prompt) is dict:
            prose_key = prompt.get("prose") if type(prompt.get("prose")) is str else None
            prose[prose_key or f"{name}Prose"] = cid
            prose[f"{name}CanonMiss"] = cid
            facts = prompt.get("facts")
            if facts is not None:
                try:
                    compile_fact_schema(facts, f"{cid}.prompt.facts")
                except GraphEngineError as exc:
                    errors.append(Issue(cid, "synonym-ring", str(exc)))
    for cid, schema in concepts:
        if type(schema.get("_name")) is not str:
            errors.append(Issue(cid, "no-name", f"{cid}: has no _name, so it never flags itself"))
        if palette is not None:
            for role in ("provider", "cleaner", "onCast"):
                pname = _provider_name(schema.get(role))
                if pname is not None and pname not in palette:
                    issue = Issue(cid, "provider-not-in-palette",
                                  f"{cid}.{role}: {pname!r} is not in the palette")
                    (errors if strict else warnings).append(issue)
        for path, _is_require in references(schema):
            key, has_member = ref_key(path)
            if key in prose:
                errors.append(Issue(cid, "prose-dependency",
                                    f"{cid}: depends on prose fact {key!r} of {prose[key]!r}"))
            elif key in collection_keys and not has_member:
                warnings.append(Issue(cid, "aggregating-dependency",
                                      f"{cid}: bare reference to collection {key!r}; "
                                      f"read a member such as {key}.length"))
    return ValidationReport(tuple(errors), tuple(warnings))
