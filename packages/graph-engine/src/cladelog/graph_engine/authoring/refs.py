"""Reading a concept's dependencies out of its schema (SPEC §1.14, validate helpers).

These pure functions are the single source of truth for "which facts does a concept read
or write": the validator, the MDL objective and the memo-stability gate all use them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs

__all__ = [
    "RefKey",
    "each_concept",
    "iter_concepts",
    "ref_key_of",
    "ref_tokens",
    "refs_of",
    "template_keys",
]

_BUILTIN_TEMPLATE_KEYS: Final = frozenset(
    {"_parent", "_id", "_name", "_incoming", "_outgoing", "originNode", "targetNode"}
)
_MAX_DEPTH: Final = 64


def _as_list(field: Any) -> list[Any]:
    if field is None:
        return []
    if isinstance(field, list | tuple):
        return list(field)
    return [field]


def _is_word(ch: str) -> bool:
    return ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("0" <= ch <= "9")


def ref_tokens(source: str) -> list[tuple[int, int, str]]:
    """``(start, end, token)`` of every reference token of an expression (SPEC §1.5).

    A token is ``$``, an optional second ``$``, a letter or ``_``, then any run of word
    characters, ``.``, ``:`` and ``$``. Text inside quoted string literals is skipped, as the
    engine's expression language does (a ``'$x'`` literal is not a reference).
    """
    out: list[tuple[int, int, str]] = []
    i = 0
    n = len(source)
    while i < n:
        ch = source[i]
        if ch in "\"'":
            j = i + 1
            while j < n and source[j] != ch:
                j += 2 if source[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "$" and (i == 0 or not (_is_word(source[i - 1]) or source[i - 1] == "$")):
            j = i + 1
            if j < n and source[j] == "$":
                j += 1
            if j < n and (source[j] == "_" or (source[j].isascii() and source[j].isalpha())):
                j += 1
                while j < n and (_is_word(source[j]) or source[j] in ".:$"):
                    j += 1
                out.append((i, j, source[i:j]))
                i = j
                continue
        i += 1
    return out


def refs_of(field: Any, is_expr: bool) -> list[str]:
    """The reference paths of a ``require`` list (``is_expr`` false) or of expressions.

    ``field`` is normalized to a list and non-strings are skipped. Require items come back
    verbatim; an expression yields each reference token minus its first ``$``
    (``$$clock:tick`` gives ``$clock:tick``).
    """
    out: list[str] = []
    for item in _as_list(field):
        if not isinstance(item, str):
            continue
        if not is_expr:
            out.append(item)
            continue
        out.extend(tok[1:] for _, _, tok in ref_tokens(item))
    return out


@attrs.frozen
class RefKey:
    """The fact key a reference path reads, and whether a ``.member`` follows it."""

    key: str
    has_member: bool


def ref_key_of(path: str) -> RefKey:
    """Strip leading ``$``, keep the text after the last ``:``, split on ``.``.

    ``$$budget:spent.length`` gives ``RefKey(key="spent", has_member=True)``.
    """
    text = str(path).lstrip("$")
    text = text.rsplit(":", 1)[-1]
    pieces = text.split(".")
    return RefKey(key=pieces[0], has_member=len(pieces) > 1)


def template_keys(tpl: Any) -> list[str]:
    """The fact keys a mutation template writes, in order, duplicates kept.

    Items are the objects of the (normalized) list; keys lose their leading ``$``;
    ``_incoming``/``_outgoing`` recurse into their items; the built-in keys ``_parent _id
    _name _incoming _outgoing originNode targetNode`` are skipped.
    """
    out: list[str] = []
    _collect_keys(_as_list(tpl), out, 0)
    return out


def _collect_keys(items: list[Any], out: list[str], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    for item in items:
        if not isinstance(item, Mapping):
            continue
        for raw_key, value in item.items():
            key = str(raw_key).lstrip("$")
            if key in ("_incoming", "_outgoing"):
                _collect_keys(_as_list(value), out, depth + 1)
            if key in _BUILTIN_TEMPLATE_KEYS:
                continue
            out.append(key)


def iter_concepts(tree: Any) -> Iterator[tuple[Mapping[str, Any], str | None]]:
    """Pre-order ``(concept, key)`` pairs: a node with ``_name`` or listed as a child, then
    its children in key order; the nameless root container is skipped."""
    if not isinstance(tree, Mapping):
        return
    stack: list[tuple[Mapping[str, Any], str | None, bool]] = [(tree, None, False)]
    while stack:
        node, key, is_child = stack.pop()
        if is_child or "_name" in node:
            yield node, key
        children = node.get("childConcepts")
        if isinstance(children, Mapping) and len(stack) < 100_000:
            for child_key in reversed(list(children)):
                child = children[child_key]
                if isinstance(child, Mapping):
                    stack.append((child, str(child_key), True))


def each_concept(tree: Any, fn: Callable[[Mapping[str, Any], str | None], Any]) -> None:
    """Call ``fn(concept, key)`` for every concept of ``tree`` in pre-order."""
    for concept, key in iter_concepts(tree):
        fn(concept, key)
