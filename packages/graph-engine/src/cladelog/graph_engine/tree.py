"""Concept trees: loading (dict, JSON/JSONC file, folder layout), merging sets, validation.

A tree is kept twice: as its raw JSON (``ConceptTree.raw``, what ``export`` returns and what
the event log stores) and as compiled :class:`Concept` records (paths parsed, gates compiled,
provider references split). Every edit builds a new raw tree and recompiles it, so a tree is
always valid or rejected whole.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Container, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from .errors import ConceptTreeError, ExpressionError
from .expr import Expression, compile_gate, join_sources
from .jsvalue import UNDEFINED
from .paths import CompiledPath, compile_path
from .refs import ref_tokens

__all__ = [
    "PROVIDER_NAME",
    "Concept",
    "ConceptTree",
    "ProviderRef",
    "build_tree",
    "load_concept_dir",
    "load_concept_file",
    "load_tree",
    "merge_sets",
    "parse_jsonc",
]

RESERVED_ROOT_FACTS: Final = frozenset({"Node", "Segment"})
_LIST_KEYS: Final = ("require", "assert", "ensure", "follow")
_TOKEN_METHOD_RE: Final = re.compile(r"\.[A-Za-z_]\w*\Z", re.ASCII)  # a token ending `.name`
_CALL_RE: Final = re.compile(r"\s*\(")
MAX_TREE_DEPTH: Final = 64
#: A well-formed provider name: ``Ns::fn``, two non-empty parts without spaces or colons.
PROVIDER_NAME: Final = re.compile(r"[^\s:]+::[^\s:]+")


@attrs.frozen
class ProviderRef:
    """``"Ns::fn"`` or ``["Ns::fn", arg...]``; ``args`` is ``False`` for the plain string form."""

    name: str
    args: tuple[Any, ...] | bool

    def args_value(self) -> Any:
        """The ``args`` passed to the provider: a list, or ``False``."""
        return False if self.args is False else list(self.args)  # type: ignore[arg-type]


@attrs.frozen
class Concept:
    """A compiled concept (SPEC §1.2)."""

    id: str
    name: str | None
    parent: str | None
    children: tuple[str, ...]
    require: tuple[CompiledPath, ...]
    gate: Expression
    ensure: tuple[str, ...]  # reference paths watched by ensure callbacks (Q1: all of them)
    follow: tuple[CompiledPath, ...]
    provider: ProviderRef | None
    cleaner: ProviderRef | None
    on_cast: ProviderRef | None
    auto_cast: bool
    auto_recast: bool
    enum: bool
    default_value: Any
    apply_mutations: Any
    schema: Mapping[str, Any] = attrs.field(eq=False, repr=False)

    @property
    def watches(self) -> bool:
        """True when the concept installs ensure or follow callbacks."""
        return bool(self.ensure) or bool(self.follow)


@attrs.frozen
class ConceptTree:
    """A validated, compiled concept tree."""

    raw: Mapping[str, Any] = attrs.field(repr=False)
    concepts: Mapping[str, Concept]
    roots: tuple[str, ...]
    by_name: Mapping[str, tuple[str, ...]]
    warnings: tuple[str, ...]

    def get(self, id_or_name: str) -> Concept | None:
        """Look a concept up by id first, then by ``_name``."""
        found = self.concepts.get(id_or_name)
        if found is not None:
            return found
        ids = self.by_name.get(id_or_name)
        return self.concepts[ids[0]] if ids else None

    def subtree(self, concept_id: str) -> list[str]:
        """The ids of a concept and all its descendants, pre-order."""
        out: list[str] = []
        stack = [concept_id]
        while stack:
            cid = stack.pop()
            out.append(cid)
            stack.extend(reversed(self.concepts[cid].children))
        return out

    def export(self) -> dict[str, Any]:
        """A deep copy of the raw tree."""
        return copy.deepcopy(dict(self.raw))


# ----------------------------------------------------------------------------- loading


def parse_jsonc(text: str, path: str = "<json>") -> Any:
    """Parse JSON with ``//`` and ``/* */`` comments (outside strings)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
            i += 1
            continue
        if ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ConceptTreeError(f"{path}: unterminated /* comment")
            out.append(" ")
            i = end + 2
        else:
            out.append(ch)
            i += 1
    try:
        return json.loads("".join(out))
    except (ValueError, RecursionError) as exc:
        raise ConceptTreeError(f"{path}: invalid JSON: {exc}") from None


def load_concept_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load one JSON/JSONC tree file (a root container ``{"childConcepts": ...}``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConceptTreeError(f"{p}: cannot read: {exc}") from None
    data = parse_jsonc(text, str(p))
    if type(data) is not dict:
        raise ConceptTreeError(f"{p}: the root must be a JSON object")
    return data


def load_concept_dir(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load the folder layout of one set: ``X.json`` is root concept X, ``X/Y.json`` its child Y.

    Files are read in sorted order; ``_id = _name = file stem``; a duplicate stem anywhere in
    the set is an error, and so is a folder without its concept file.
    """
    root_dir = Path(path)
    if not root_dir.is_dir():
        raise ConceptTreeError(f"{root_dir}: not a directory")
    seen: dict[str, Path] = {}

    def load_level(folder: Path, depth: int) -> dict[str, Any]:
        if depth > MAX_TREE_DEPTH:
            raise ConceptTreeError(f"{folder}: concept folders nested too deeply")
        children: dict[str, Any] = {}
        entries = sorted(folder.iterdir(), key=lambda e: e.name)
        files = [e for e in entries if e.is_file() and e.suffix == ".json"]
        dirs = {e.name: e for e in entries if e.is_dir()}
        for file in files:
            stem = file.stem
            if stem in seen:
                raise ConceptTreeError(f"{file}: duplicate concept {stem!r} (also {seen[stem]})")
            seen[stem] = file
            concept = load_concept_file(file)
            concept["_id"] = stem
            concept["_name"] = stem
            if stem in dirs:
                sub = load_level(dirs.pop(stem), depth + 1)
                merged = dict(concept.get("childConcepts") or {})
                merged.update(sub)
                concept["childConcepts"] = merged
            children[stem] = concept
        for name, folder_path in sorted(dirs.items()):
            if depth == 0 and not files:
                # only folders: the folder of a concept map (one folder per set), not a set
                raise ConceptTreeError(
                    f"{folder}: holds no concept file (*.json), only the folder(s) "
                    f"{', '.join(sorted(dirs))}: is it a folder of concept sets? Give one "
                    f"set's folder (e.g. {folder_path}); in a set, X/ holds the children "
                    f"of X.json")
            raise ConceptTreeError(f"{folder_path}: holds child concepts of {name!r}, but "
                                   f"there is no {name}.json beside it")
        return children

    return {"childConcepts": load_level(root_dir, 0)}


def load_tree(source: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """Load a raw tree from a dict (deep-copied), a JSON/JSONC file or a set folder."""
    if isinstance(source, Mapping):
        return copy.deepcopy(dict(source))
    p = Path(source)
    if p.is_dir():
        return load_concept_dir(p)
    return load_concept_file(p)


def _deep_merge(base: Any, update: Any, concat_arrays: bool) -> Any:
    if type(base) is dict and type(update) is dict:
        out = dict(base)
        for key, value in update.items():
            out[key] = _deep_merge(out[key], value, concat_arrays) if key in out else (
                copy.deepcopy(value)
            )
        return out
    if concat_arrays and type(base) is list and type(update) is list:
        return base + copy.deepcopy(update)
    return copy.deepcopy(update)


def merge_sets(
    concept_map: Mapping[str, Any], sets: Iterable[str] = ("common",)
) -> dict[str, Any]:
    """Deep-merge the named sets in order: objects recurse, scalars last-wins, arrays concat."""
    merged: dict[str, Any] = {}
    for name in sets:
        if name not in concept_map:
            raise ConceptTreeError(f"conceptSets: unknown set {name!r}")
        tree = load_tree(concept_map[name])
        merged = _deep_merge(merged, tree, True)
    return merged


def deep_merge_replace(base: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``updates`` into ``base`` with arrays replaced (``patchConcept``)."""
    result = _deep_merge(dict(base), dict(updates), False)
    assert type(result) is dict
    return result


# ----------------------------------------------------------------------------- compiling


def _calls_method_in_token(text: str) -> bool:
    """True when a reference token of ``text`` ends in ``.name`` and is called (Q2)."""
    return any(_TOKEN_METHOD_RE.search(token) and _CALL_RE.match(text, end)
               for _, end, token in ref_tokens(text))


def _as_list(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if type(value) is str:
        return [value]  # Q3: a plain string is a one-item list, for every key
    if type(value) is not list:
        raise ConceptTreeError(f"{path}: must be a string or a list of strings")
    out: list[str] = []
    for i, item in enumerate(value):
        if item is None:
            continue
        if type(item) is not str:
            raise ConceptTreeError(f"{path}[{i}]: must be a string, got {type(item).__name__}")
        out.append(item)
    return out


def _provider_ref(
    value: Any, path: str, providers: Container[str] | None
) -> ProviderRef | None:
    if value is None:
        return None
    if type(value) is str:
        ref = ProviderRef(value, False)
    elif type(value) is list and value and type(value[0]) is str:
        ref = ProviderRef(value[0], tuple(value[1:]))
    else:
        raise ConceptTreeError(f"{path}: must be \"Ns::fn\" or [\"Ns::fn\", arg...]")
    if providers is not None and ref.name not in providers:
        raise ConceptTreeError(f"{path}: provider {ref.name!r} is not registered")
    return ref


def _check_template(tpl: Any, path: str, depth: int = 0) -> None:
    """Reject external references (Q22) and malformed items in a static template."""
    if depth > MAX_TREE_DEPTH:
        raise ConceptTreeError(f"{path}: template nested too deeply")
    items = tpl if type(tpl) is list else [tpl]
    for i, item in enumerate(items):
        ipath = f"{path}[{i}]" if type(tpl) is list else path
        if type(item) is not dict:
            raise ConceptTreeError(f"{ipath}: a template item must be an object")
        for key, value in item.items():
            if key.startswith("$$") and key != "$$_id":
                raise ConceptTreeError(
                    f"{ipath}.{key}: external references ($$key) are not supported"
                )
            if key in ("_incoming", "_outgoing") or (key.startswith("$") and type(value) is dict):
                _check_template(value, f"{ipath}.{key}", depth + 1)


def _compile_concept(
    key: str,
    schema: Any,
    parent: str | None,
    path: str,
    providers: Container[str] | None,
    warnings: list[str],
) -> Concept:
    if type(schema) is not dict:
        raise ConceptTreeError(f"{path}: a concept must be a JSON object")
    cid = schema.get("_id", key)
    if type(cid) is not str or cid == "":
        raise ConceptTreeError(f"{path}._id: must be a non-empty string")
    if cid != key:
        raise ConceptTreeError(f"{path}._id: {cid!r} differs from its key {key!r} (Q21)")
    name = schema.get("_name")
    if name is not None and (type(name) is not str or name == ""):
        raise ConceptTreeError(f"{path}._name: must be a non-empty string")
    lists = {k: _as_list(schema.get(k), f"{path}.{k}") for k in _LIST_KEYS}
    try:
        gate = compile_gate([lists["assert"], lists["ensure"]], f"{path}.assert/ensure")
        ensure_expr = compile_gate([lists["ensure"]], f"{path}.ensure")
        for text in lists["assert"] + lists["ensure"]:
            if _calls_method_in_token(text):
                warnings.append(
                    f"{path}: '{text}' calls a method inside a reference token;"
                    " it evaluates to undefined (Q2), write ($x).method()"
                )
    except ExpressionError as exc:
        raise ConceptTreeError(str(exc)) from None
    children_raw = schema.get("childConcepts")
    if children_raw is not None and type(children_raw) is not dict:
        raise ConceptTreeError(f"{path}.childConcepts: must be an object")
    children = tuple((children_raw or {}).keys())
    auto_cast = schema.get("autoCast", True)
    auto_recast = schema.get("autoReCast", False)
    for flag_key, flag in (("autoCast", auto_cast), ("autoReCast", auto_recast)):
        if type(flag) is not bool:
            raise ConceptTreeError(f"{path}.{flag_key}: must be true or false")
    ctype = schema.get("type")
    if ctype is not None and type(ctype) is not str:
        raise ConceptTreeError(f"{path}.type: must be a string")
    apply_mutations = schema.get("applyMutations")
    if apply_mutations is not None:
        _check_template(apply_mutations, f"{path}.applyMutations")
    if name in RESERVED_ROOT_FACTS and (lists["require"] or lists["assert"] or lists["ensure"]):
        warnings.append(
            f"{path}: a concept named {name!r} with conditions is treated as cast from the start"
            " and its children may never open"
        )
    own = {k: v for k, v in schema.items() if k != "childConcepts"}
    return Concept(
        id=cid,
        name=name,
        parent=parent,
        children=children,
        require=tuple(compile_path(r) for r in lists["require"]),
        gate=gate,
        ensure=ensure_expr.refs,
        follow=tuple(compile_path(f) for f in lists["follow"]),
        provider=_provider_ref(schema.get("provider"), f"{path}.provider", providers),
        cleaner=_provider_ref(schema.get("cleaner"), f"{path}.cleaner", providers),
        on_cast=_provider_ref(schema.get("onCast"), f"{path}.onCast", providers),
        auto_cast=auto_cast,
        auto_recast=auto_recast,
        enum=ctype == "enum",
        default_value=schema.get("defaultValue", UNDEFINED),
        apply_mutations=apply_mutations,
        schema=own,
    )


def build_tree(raw: Any, providers: Container[str] | None = None) -> ConceptTree:
    """Validate and compile a raw root container.

    ``providers`` is the set of registered provider names; when given, a concept naming an
    unregistered provider, cleaner or onCast is an error (Q18). Raises
    :class:`ConceptTreeError` naming the concept path on any defect.
    """
    if type(raw) is not dict:
        raise ConceptTreeError("tree: the root must be a JSON object")
    top = raw.get("childConcepts", {})
    if type(top) is not dict:
        raise ConceptTreeError("tree.childConcepts: must be an object")
    concepts: dict[str, Concept] = {}
    by_name: dict[str, list[str]] = {}
    warnings: list[str] = []
    stack: list[tuple[str, Any, str | None, str, int]] = [
        (key, value, None, f"tree.{key}", 0) for key, value in reversed(list(top.items()))
    ]
    while stack:
        key, schema, parent, path, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise ConceptTreeError(f"{path}: concepts nested deeper than {MAX_TREE_DEPTH}")
        concept = _compile_concept(key, schema, parent, path, providers, warnings)
        if concept.id in concepts:
            raise ConceptTreeError(f"{path}._id: duplicate concept id {concept.id!r}")
        concepts[concept.id] = concept
        if concept.name is not None:
            by_name.setdefault(concept.name, []).append(concept.id)
        kids = schema.get("childConcepts") or {}
        stack.extend(
            (k, v, concept.id, f"{path}.{k}", depth + 1) for k, v in reversed(list(kids.items()))
        )
    return ConceptTree(
        raw=raw,
        concepts=concepts,
        roots=tuple(top.keys()),
        by_name={k: tuple(v) for k, v in by_name.items()},
        warnings=tuple(warnings),
    )


def raw_node(raw: dict[str, Any], tree: ConceptTree, concept_id: str | None) -> dict[str, Any]:
    """The raw dict of ``concept_id`` inside ``raw`` (the root container for None)."""
    chain: list[str] = []
    cid = concept_id
    while cid is not None:
        chain.append(cid)
        cid = tree.concepts[cid].parent
    node = raw
    for step in reversed(chain):
        node = node["childConcepts"][step]
    return node


def ensure_sources(schema: Mapping[str, Any]) -> str:
    """The joined ensure source of a raw schema (used by docs and tests)."""
    return join_sources(_as_list(schema.get("ensure"), "ensure"))
