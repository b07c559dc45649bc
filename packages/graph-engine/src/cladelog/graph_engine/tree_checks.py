"""The four-pass concept-tree validator (SPEC §1.14, ``validate``).

It sits below :mod:`cladelog.graph_engine.authoring` (which re-exports it as
``authoring.validate``) so that :func:`cladelog.graph_engine.validate_tree` can run it
without importing the authoring modules; it reads references through
:mod:`cladelog.graph_engine.refs`, the one reference parser. The passes:

1. **Facts**: collect the discrete facts (concept names, ``prompt.facts`` keys,
   ``<name>FactsDigest``, template keys) and the prose facts (``prompt.prose`` or
   ``<name>Prose``, ``<name>CanonMiss``); check synonym rings; warn on concepts named
   ``Node``/``Segment`` that carry conditions.
2. **Per concept**: ``no-name``, ``provider-not-in-palette``, ``blocked-prop``,
   ``unparseable``, opt-in ``continuous-gate``, ``prose-dependency``,
   ``aggregating-dependency`` and, given ``known_facts``, ``unknown-ref``.
3. **Stratification**: a strongly connected set of concepts with a negative dependency
   (``!$x``, ``$x == false``…) is an ``unstratified-cycle`` warning.
4. **Interface coherence**: an enum gate no producer can satisfy
   (``interface-never-fire``), one alias mapped to two members (``synonym-intent-collision``).

The checks read structure, never expression meaning. Nothing here raises on a bad tree
except :func:`validate_or_throw`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

import attrs

from .errors import AuthoringError, GraphEngineError
from .expr import compile_expression
from .refs import (
    is_cross_object,
    iter_concepts,
    ref_key_of,
    ref_tokens,
    refs_of,
    schema_refs,
    template_keys,
)

__all__ = [
    "DEFAULT_COLLECTION_KEYS",
    "OPTION_ALIASES",
    "ConceptValidationError",
    "Finding",
    "ValidationResult",
    "concept_label",
    "provider_name",
    "validate_concept_tree",
    "validate_or_throw",
]

DEFAULT_COLLECTION_KEYS: Final = ("expandedInto", "answeredBy", "children", "steps")
_MARKERS: Final = frozenset({"Node", "Segment"})
_BLOCKED_RE: Final = re.compile(r"\b(constructor|__proto__|prototype)\b")
_CONTINUOUS_RE: Final = re.compile(r"^\s*(?:<=|>=|===|!==|==|!=|<|>)\s*-?\d*\.\d+")
_EXEMPT_SUFFIX_RE: Final = re.compile(r"(Rank|Bucket|Band|Idx|Index|Digest)$")
_NEG_AFTER_RE: Final = re.compile(
    r"^\s*\)*\s*(?:(?:===|==)\s*(?:false|0|null|'false'|\"false\")(?![\w.])"
    r"|(?:!==|!=)\s*true(?![\w.]))")
_NEG_BEFORE_RE: Final = re.compile(
    r"(?:(?:false|0|null|'false'|\"false\")\s*(?:===|==)|true\s*(?:!==|!=))\s*\(*\s*$")
_EQ_LITERAL_RE: Final = re.compile(r"^\s*(?:===|==)\s*(['\"])(.*?)\1")
_IN_LIST_RE: Final = re.compile(r"^\s*in\s*\[([^\]]*)\]")
_QUOTED_RE: Final = re.compile(r"(['\"])(.*?)\1")
_BUILTIN_FACTS: Final = frozenset({"_id", "Node", "Segment", "originNode", "targetNode"})


@attrs.frozen
class Finding:
    """One finding: the concept, a kind, a one-line message, the reference involved (a
    path, or for ``unparseable`` and ``interface-never-fire`` the expression as written)
    and, for ``unstratified-cycle``, the cycle's members in the order Tarjan's stack pops
    them (``concept`` is the first)."""

    concept: str
    kind: str
    message: str
    ref: str | None = None
    cycle: tuple[str, ...] | None = None


@attrs.frozen
class ValidationResult:
    """Errors and warnings, in the order the passes found them."""

    errors: tuple[Finding, ...]
    warnings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """True when there is no error."""
        return not self.errors


class ConceptValidationError(AuthoringError):
    """Raised by :func:`validate_or_throw` with the first error."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(f"{finding.concept}: {finding.kind}: {finding.message}")
        self.finding = finding


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _norm_token(value: Any) -> str:
    return " ".join(str(value).strip().lower().split())


def concept_label(c: Mapping[str, Any], key: str | None) -> str:
    """How a finding names a concept: ``_name``, else ``_id``, else its key."""
    name = c.get("_name") or c.get("_id") or key
    return str(name) if name is not None else "<root>"


def provider_name(value: Any) -> str | None:
    """The provider name of a ``provider`` / ``cleaner`` / ``onCast`` value (a name or
    ``[name, arg...]``), or None."""
    first = value[0] if isinstance(value, list | tuple) and value else value
    return first if isinstance(first, str) else None


def _fact_specs(c: Mapping[str, Any]) -> Mapping[str, Any]:
    prompt = c.get("prompt")
    facts = prompt.get("facts") if isinstance(prompt, Mapping) else None
    return facts if isinstance(facts, Mapping) else {}


class _Validator:
    def __init__(self, tree: Any, opts: Mapping[str, Any]) -> None:
        self.concepts = list(iter_concepts(tree))
        self.opts = opts
        self.errors: list[Finding] = []
        self.warnings: list[Finding] = []
        self.discrete: set[str] = set()
        self.prose: set[str] = set()
        self.strict = bool(opts.get("strict"))

    def add(self, error: bool, concept: str, kind: str, message: str,
            ref: str | None = None, cycle: tuple[str, ...] | None = None) -> None:
        (self.errors if error else self.warnings).append(
            Finding(concept, kind, message, ref, cycle))

    # ------------------------------------------------------------------ pass 1

    def collect(self) -> None:
        for c, key in self.concepts:
            name = c.get("_name")
            label = concept_label(c, key)
            if isinstance(name, str):
                self.discrete.add(name)
            self.discrete.update(template_keys(c.get("applyMutations")))
            prompt = c.get("prompt")
            if isinstance(prompt, Mapping) and isinstance(name, str):
                self.discrete.update(str(k) for k in _fact_specs(c))
                self.discrete.add(f"{name}FactsDigest")
                prose = prompt.get("prose")
                self.prose.add(prose if isinstance(prose, str) else f"{name}Prose")
                self.prose.add(f"{name}CanonMiss")
            for fact, spec in _fact_specs(c).items():
                self.check_ring(label, str(fact), spec)
            if name in _MARKERS and any(c.get(k) for k in ("require", "ensure", "assert")):
                self.add(False, label, "engine-marker-name",
                         f"a concept named {name!r} with conditions is treated as cast from the "
                         "start; its conditions fail once and its children never open")
        self.discrete -= self.prose

    def check_ring(self, label: str, fact: str, spec: Any) -> None:
        if not isinstance(spec, Mapping) or "enum" not in spec:
            return
        members = spec.get("enum")
        if not isinstance(members, list):
            self.add(True, label, "synonym-ring", f"prompt.facts.{fact}.enum: must be a list")
            return
        tokens: dict[str, str] = {}
        for m in members:
            t = _norm_token(m)
            if t in tokens:
                self.add(True, label, "synonym-ring",
                         f"prompt.facts.{fact}: members {tokens[t]!r} and {m!r} normalize alike")
            tokens[t] = str(m)
        synonyms = spec.get("synonyms") or {}
        if not isinstance(synonyms, Mapping):
            self.add(True, label, "synonym-ring", f"prompt.facts.{fact}.synonyms: must be an "
                     "object")
            return
        seen: dict[str, str] = {}
        for member, aliases in synonyms.items():
            if member not in [str(m) for m in members]:
                self.add(True, label, "synonym-ring",
                         f"prompt.facts.{fact}.synonyms: {member!r} is not a member")
                continue
            for alias in _as_list(aliases):
                t = _norm_token(alias)
                if t in tokens and tokens[t] != member:
                    self.add(True, label, "synonym-ring", f"prompt.facts.{fact}.synonyms."
                             f"{member}: alias {alias!r} collides with member {tokens[t]!r}")
                elif t in seen and seen[t] != member:
                    self.add(True, label, "synonym-ring", f"prompt.facts.{fact}.synonyms."
                             f"{member}: alias {alias!r} is also an alias of {seen[t]!r}")
                seen[t] = str(member)

    # ------------------------------------------------------------------ pass 2

    def per_concept(self) -> None:
        palette = self.opts.get("palette")
        known = self.opts.get("known_facts")
        collections = set(self.opts.get("collection_keys") or DEFAULT_COLLECTION_KEYS)
        exempt = set(self.opts.get("continuous_exempt") or ())
        declared = self.discrete | set(known or ()) | _BUILTIN_FACTS
        for c, key in self.concepts:
            label = concept_label(c, key)
            if not c.get("_name"):
                self.add(True, label, "no-name", "the concept has no _name, so it never "
                         "writes its flag")
            provider = provider_name(c.get("provider"))
            if palette is not None and provider is not None and provider not in palette:
                self.add(self.strict, label, "provider-not-in-palette",
                         f"provider {provider!r} is not in the palette", provider)
            for field in ("assert", "ensure"):
                for i, src in enumerate(_as_list(c.get(field))):
                    if isinstance(src, str):
                        self.check_expression(label, f"{field}[{i}]", src, exempt)
            for ref, _ in schema_refs(c):
                rk = ref_key_of(ref)
                if rk.key in self.prose:
                    self.add(True, label, "prose-dependency",
                             f"{ref!r} reads the prose fact {rk.key!r}; depend on typed facts",
                             ref)
                if rk.key in collections:  # never also an unknown-ref
                    if not rk.has_member:
                        self.add(False, label, "aggregating-dependency",
                                 f"{ref!r} reads the whole collection {rk.key!r}; gate on a "
                                 "member such as .length", ref)
                elif known is not None and not is_cross_object(ref) and rk.key not in declared \
                        and rk.key not in self.prose:
                    self.add(self.strict, label, "unknown-ref",
                             f"{ref!r}: no concept produces {rk.key!r} and it is not declared",
                             ref)

    def check_expression(self, label: str, where: str, src: str, exempt: set[str]) -> None:
        blocked = _BLOCKED_RE.search(src)
        if blocked:
            self.add(True, label, "blocked-prop",
                     f"{where}: touches the blocked property {blocked.group(1)!r}")
            return
        try:
            compile_expression(src, f"{label}.{where}")
        except (GraphEngineError, RecursionError) as exc:
            self.add(True, label, "unparseable", f"{where}: {exc}", src)
            return
        if not self.opts.get("flag_continuous_gates"):
            return
        for _, end, tok in ref_tokens(src):
            key = ref_key_of(tok[1:]).key
            if key in exempt or _EXEMPT_SUFFIX_RE.search(key):
                continue
            if _CONTINUOUS_RE.match(src[end:]):
                self.add(False, label, "continuous-gate",
                         f"{where}: {tok} is compared with a fractional literal; gate on a "
                         "discrete bucket", tok[1:])

    # ------------------------------------------------------------------ pass 3

    def stratify(self) -> None:
        producers: dict[str, list[int]] = {}
        for i, (c, _) in enumerate(self.concepts):
            facts = [c["_name"]] if isinstance(c.get("_name"), str) else []
            for fact in facts + template_keys(c.get("applyMutations")):
                producers.setdefault(fact, [])
                if i not in producers[fact]:
                    producers[fact].append(i)
        edges: list[dict[int, bool]] = []  # reader -> {producer: negative}
        for c, _ in self.concepts:
            out: dict[int, bool] = {}
            for ref in refs_of(c.get("require"), False):
                for p in producers.get(ref_key_of(ref).key, ()):
                    out.setdefault(p, False)
            for field in ("ensure", "assert"):
                for src in _as_list(c.get(field)):
                    if not isinstance(src, str):
                        continue
                    for start, end, tok in ref_tokens(src):
                        negative = _negated(src, start, end)
                        for p in producers.get(ref_key_of(tok[1:]).key, ()):
                            out[p] = out.get(p, False) or negative
            edges.append(out)
        for scc in _tarjan(edges):
            members = set(scc)
            negative = any(neg for v in scc for w, neg in edges[v].items() if w in members)
            if len(scc) == 1 and not edges[scc[0]].get(scc[0], False):
                continue
            if negative:
                names = tuple(concept_label(*self.concepts[v]) for v in scc)
                self.add(False, names[0], "unstratified-cycle",
                         f"negation inside the dependency cycle {' -> '.join(names)}; the "
                         "result may depend on apply order or flip-flop to the apply cap",
                         cycle=names)

    # ------------------------------------------------------------------ pass 4

    def interfaces(self) -> None:
        enums: dict[str, set[str]] = {}
        aliases: dict[tuple[str, str], tuple[str, str]] = {}
        for c, key in self.concepts:
            label = concept_label(c, key)
            for fact, spec in _fact_specs(c).items():
                if not isinstance(spec, Mapping) or not isinstance(spec.get("enum"), list):
                    continue
                enums.setdefault(str(fact), set()).update(str(m) for m in spec["enum"])
                synonyms = spec.get("synonyms")
                if not isinstance(synonyms, Mapping):
                    continue
                for member, names in synonyms.items():
                    for alias in _as_list(names):
                        slot = (str(fact), _norm_token(alias))
                        prior = aliases.get(slot)
                        if prior is not None and prior[0] != str(member):
                            self.add(True, label, "synonym-intent-collision",
                                     f"alias {alias!r} of {fact!r} means {member!r} here but "
                                     f"{prior[0]!r} in {prior[1]}")
                        aliases.setdefault(slot, (str(member), label))
        if not enums:
            return
        produced = {k: set(v) for k, v in enums.items()}
        for c, _ in self.concepts:
            for item in _as_list(c.get("applyMutations")):
                if isinstance(item, Mapping):
                    for k, v in item.items():
                        key = str(k).lstrip("$")
                        if key in produced and isinstance(v, str | int | float | bool):
                            produced[key].add(str(v))
        for c, key in self.concepts:
            label = concept_label(c, key)
            for field in ("ensure", "assert"):
                for src in _as_list(c.get(field)):
                    if isinstance(src, str):
                        self.check_gates(label, src, produced)

    def check_gates(self, label: str, src: str, produced: Mapping[str, set[str]]) -> None:
        """``interface-never-fire`` for each ``$k == 'V'`` / ``$k in [...]`` gate of ``src``
        that asks for a value no producer of ``k`` writes; ``ref`` is ``src`` as written."""
        for _, end, tok in ref_tokens(src):
            ref = tok[1:]
            rk = ref_key_of(ref)
            if rk.has_member or rk.key not in produced:
                continue
            rest = src[end:]
            eq = _EQ_LITERAL_RE.match(rest)
            inside = _IN_LIST_RE.match(rest)
            if eq:
                wanted = [eq.group(2)]
            elif inside:
                wanted = [q.group(2) for q in _QUOTED_RE.finditer(inside.group(1))]
            else:
                continue
            for value in wanted:
                if value not in produced[rk.key]:
                    self.add(False, label, "interface-never-fire",
                             f"{tok} is gated on {value!r}, which no producer of "
                             f"{rk.key!r} writes (members: {sorted(produced[rk.key])})", src)


def _negated(src: str, start: int, end: int) -> bool:
    """True when the token at ``src[start:end]`` sits under ``!`` or a false comparison."""
    j = start - 1
    while j >= 0 and src[j] in " \t(":
        j -= 1
    if j >= 0 and src[j] == "!":
        return True
    return bool(_NEG_AFTER_RE.match(src[end:]) or _NEG_BEFORE_RE.search(src[:start]))


def _tarjan(edges: list[dict[int, bool]]) -> list[list[int]]:
    """Tarjan's strongly connected components, each listed in the order the stack pops it.

    Vertices are started in index order (tree order) and each vertex's edges are followed
    in their insertion order, as the recursive algorithm does; this is the iterative form
    (no recursion limit on deep trees).
    """
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(len(edges)):
        if root in index:
            continue
        work: list[tuple[int, list[int], int]] = [(root, list(edges[root]), 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, todo, at = work[-1]
            if at < len(todo):
                work[-1] = (v, todo, at + 1)
                w = todo[at]
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, list(edges[w]), 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                scc: list[int] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                out.append(scc)
    return out


#: The reference's option names (camelCase), accepted as aliases of the keyword arguments.
OPTION_ALIASES: Final = {
    "knownFacts": "known_facts", "flagContinuousGates": "flag_continuous_gates",
    "continuousExempt": "continuous_exempt", "collectionKeys": "collection_keys",
    "skipStratification": "skip_stratification",
    "skipInterfaceCoherence": "skip_interface_coherence",
}
_NAME_OPTIONS: Final = ("palette", "known_facts", "continuous_exempt", "collection_keys")


def _name_set(value: Any, field: str, allow_none: bool) -> set[str] | None:
    if value is None and allow_none:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise AuthoringError(f"opts.{field}: must be a list of names, got "
                             f"{type(value).__name__}")
    out: set[str] = set()
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise AuthoringError(f"opts.{field}[{i}]: must be a string, got "
                                 f"{type(item).__name__}")
        out.add(item)
    return out


def validate_concept_tree(
    tree: Any,
    *,
    palette: Collection[str] | None = None,
    strict: bool = False,
    known_facts: Iterable[str] | None = None,
    flag_continuous_gates: bool = False,
    continuous_exempt: Iterable[str] = (),
    collection_keys: Iterable[str] = DEFAULT_COLLECTION_KEYS,
    skip_stratification: bool = False,
    skip_interface_coherence: bool = False,
    **aliases: Any,
) -> ValidationResult:
    """Run the four passes over a raw concept tree and return its errors and warnings.

    The reference's camelCase option names (``knownFacts``, ``skipStratification``…, see
    :data:`OPTION_ALIASES`) are accepted too, so a conformance vector's ``opts`` object can
    be passed as ``**opts``; an unknown option is an :class:`AuthoringError`.
    """
    if not isinstance(tree, Mapping):
        raise AuthoringError(f"tree: must be an object, got {type(tree).__name__}")
    opts: dict[str, Any] = {
        "palette": palette, "strict": strict, "known_facts": known_facts,
        "flag_continuous_gates": flag_continuous_gates,
        "continuous_exempt": continuous_exempt, "collection_keys": collection_keys,
        "skip_stratification": skip_stratification,
        "skip_interface_coherence": skip_interface_coherence,
    }
    for name, value in aliases.items():
        target = OPTION_ALIASES.get(name)
        if target is None:
            raise AuthoringError(f"opts.{name}: unknown option (known: "
                                 f"{', '.join(sorted(opts))})")
        opts[target] = value
    for name in _NAME_OPTIONS:
        opts[name] = _name_set(opts[name], name, name in ("palette", "known_facts"))
    v = _Validator(tree, opts)
    v.collect()
    v.per_concept()
    if not opts["skip_stratification"]:
        v.stratify()
    if not opts["skip_interface_coherence"]:
        v.interfaces()
    return ValidationResult(tuple(v.errors), tuple(v.warnings))


def validate_or_throw(tree: Any, **opts: Any) -> ValidationResult:
    """:func:`validate_concept_tree`, raising :class:`ConceptValidationError` on the first
    error."""
    result = validate_concept_tree(tree, **opts)
    if result.errors:
        raise ConceptValidationError(result.errors[0])
    return result
