"""Static checks of a concept tree: the loader's checks plus the four-pass validator.

:func:`validate_tree` never raises on a bad tree: it returns every problem it finds as an
:class:`Issue` (``errors`` and ``warnings``). A tree the engine cannot load at all gives one
``load`` error naming the path and nothing else. A loadable tree gets, in this order:

1. everything the four-pass validator of SPEC §1.14 finds
   (:func:`cladelog.graph_engine.tree_checks.validate_concept_tree`, also known as
   ``authoring.validate_concept_tree``: ``no-name``,
   ``provider-not-in-palette``, ``blocked-prop``, ``unparseable``, ``prose-dependency``,
   ``aggregating-dependency``, ``synonym-ring``, ``engine-marker-name``, opt-in
   ``continuous-gate`` and ``unknown-ref``, ``unstratified-cycle``,
   ``interface-never-fire``, ``synonym-intent-collision``);
2. what only the engine checks: the loader's ``method-in-token`` warnings (Q2),
   ``cleaner``/``onCast`` providers outside the palette, ``provider-name`` errors (a
   ``provider``, ``cleaner`` or ``onCast`` that does not read ``Ns::fn``: no registry can
   hold it, so the engine would refuse it at load, Q18), and ``prompt.facts`` schemas the
   LLM provider would refuse (``synonym-ring``, unless pass 1 already reported one for
   that concept).

Whether a provider is *registered* depends on where the tree will run: :func:`registry_issues`
checks the names against a registry (``cladelog graph validate`` uses the providers of
the deployment's enabled plugins unless ``--palette`` is given).

Each issue names its concept (``_name``, else ``_id``, else its key; ``tree`` for the
container) and its message starts with that name.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

import attrs

from .canon import compile_fact_schema
from .errors import GraphEngineError
from .refs import iter_concepts
from .tree import PROVIDER_NAME, build_tree
from .tree_checks import (
    DEFAULT_COLLECTION_KEYS,
    concept_label,
    provider_name,
    validate_concept_tree,
)

__all__ = ["COLLECTION_KEYS", "Issue", "ValidationReport", "registry_issues", "validate_tree"]

_ROLES: Final = ("provider", "cleaner", "onCast")
#: Collection keys whose bare reference is an ``aggregating-dependency`` warning.
COLLECTION_KEYS: Final = DEFAULT_COLLECTION_KEYS


@attrs.frozen
class Issue:
    """One finding: the concept (or ``tree``), a kind, a one-line message and, when the
    finding is about one reference or expression, that reference path or the expression
    as written; an ``unstratified-cycle`` also names its ``cycle``."""

    concept: str
    kind: str
    message: str
    ref: str | None = None
    cycle: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"concept", "kind", "message", "ref"}``, plus ``"cycle"`` (a list) when set."""
        out: dict[str, Any] = {"concept": self.concept, "kind": self.kind,
                               "message": self.message, "ref": self.ref}
        if self.cycle is not None:
            out["cycle"] = list(self.cycle)
        return out


@attrs.frozen
class ValidationReport:
    """``errors`` make a tree unusable or wrong; ``warnings`` are likely mistakes."""

    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]

    @property
    def ok(self) -> bool:
        """True when there is no error."""
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        """``{"ok", "errors", "warnings"}`` with each issue as :meth:`Issue.to_json`."""
        return {"ok": self.ok, "errors": [i.to_json() for i in self.errors],
                "warnings": [i.to_json() for i in self.warnings]}


def _issue(concept: str, kind: str, message: str, ref: str | None = None,
           cycle: tuple[str, ...] | None = None) -> Issue:
    prefix = f"{concept}: "
    return Issue(concept, kind, message if message.startswith(prefix) else prefix + message,
                 ref, cycle)


def _engine_checks(raw: Mapping[str, Any], palette: Collection[str] | None, strict: bool,
                   ring_reported: set[str], errors: list[Issue],
                   warnings: list[Issue]) -> None:
    """Pass 2 of the module docstring: what the four-pass validator does not look at."""
    for schema, key in iter_concepts(raw):
        label = concept_label(schema, key)
        for role in _ROLES:
            pname = provider_name(schema.get(role))
            if pname is not None and not PROVIDER_NAME.fullmatch(pname):
                errors.append(_issue(label, "provider-name", f"{role} {pname!r} is not a "
                                     f"provider name 'Ns::fn'", pname))
        if palette is not None:
            for role in ("cleaner", "onCast"):
                pname = provider_name(schema.get(role))
                if pname is not None and pname not in palette:
                    issue = _issue(label, "provider-not-in-palette",
                                   f"{role} {pname!r} is not in the palette", pname)
                    (errors if strict else warnings).append(issue)
        prompt = schema.get("prompt")
        facts = prompt.get("facts") if isinstance(prompt, Mapping) else None
        if facts is not None and label not in ring_reported:
            try:
                compile_fact_schema(facts, "prompt.facts")
            except GraphEngineError as exc:
                errors.append(_issue(label, "synonym-ring", str(exc)))


def registry_issues(raw: Any, registered: Collection[str]) -> list[Issue]:
    """``provider-not-registered`` errors: every well-formed ``provider``, ``cleaner`` or
    ``onCast`` of ``raw`` that ``registered`` does not hold (SPEC §0 Q18: a missing
    provider is an error at load). Malformed names are left to :func:`validate_tree`."""
    known = set(registered)
    out: list[Issue] = []
    for schema, key in iter_concepts(raw):
        label = concept_label(schema, key)
        for role in _ROLES:
            pname = provider_name(schema.get(role))
            if pname is not None and PROVIDER_NAME.fullmatch(pname) and pname not in known:
                out.append(_issue(label, "provider-not-registered",
                                  f"{role} {pname!r} is not registered by an enabled plugin"
                                  " (name a scenario's or a program's own providers with"
                                  " --palette)",
                                  pname))
    return out


def validate_tree(
    raw: Any,
    *,
    palette: Collection[str] | None = None,
    strict: bool = False,
    collection_keys: Collection[str] = COLLECTION_KEYS,
    known_facts: Iterable[str] | None = None,
    flag_continuous_gates: bool = False,
) -> ValidationReport:
    """Load ``raw`` (a root container) as the engine would, then run every static check.

    ``palette`` (provider names allowed; None: no check) and ``strict`` (palette and
    unknown-reference findings become errors) are passed to the four-pass validator with
    ``collection_keys``, ``known_facts`` (declared facts: turns on ``unknown-ref``) and
    ``flag_continuous_gates``. See the module docstring for what is reported. Bad options
    (not bad trees) raise the validator's :class:`~cladelog.graph_engine.errors.AuthoringError`
    (a ``ValueError``).
    """
    try:
        compiled = build_tree(raw, None)
    except GraphEngineError as exc:
        return ValidationReport((Issue("tree", "load", str(exc)),), ())
    except RecursionError:
        return ValidationReport((Issue("tree", "load", "tree: nested too deeply"),), ())
    try:
        found = validate_concept_tree(
            raw, palette=palette, strict=strict, known_facts=known_facts,
            flag_continuous_gates=flag_continuous_gates, collection_keys=collection_keys)
    except RecursionError:  # a loadable tree should never get here
        return ValidationReport((Issue("tree", "load", "tree: nested too deeply"),), ())
    errors = [_issue(f.concept, f.kind, f.message, f.ref, f.cycle) for f in found.errors]
    warnings = [_issue(f.concept, f.kind, f.message, f.ref, f.cycle) for f in found.warnings]
    for text in compiled.warnings:
        if "treated as cast" in text:
            continue  # the four-pass validator reports it as engine-marker-name
        warnings.append(Issue(text.split(":", 1)[0].removeprefix("tree."), "method-in-token",
                              text))
    ring_reported = {f.concept for f in found.errors if f.kind == "synonym-ring"}
    _engine_checks(raw, palette, strict, ring_reported, errors, warnings)
    return ValidationReport(tuple(errors), tuple(warnings))
