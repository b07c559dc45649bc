"""The reference parser: which facts a concept reads and writes (SPEC §1.3, §1.5, §1.14).

This module is the one owner of "what does this expression, require list or template refer
to". :func:`lex` is the lexical layer of the expression language: the expression compiler
builds its tokens from it, and :func:`ref_tokens` reads the reference tokens off it, so the
provider cache's key, the memo surface, the four-pass validator and
:func:`~cladelog.graph_engine.validate_tree` see exactly the references that evaluation
resolves. It is pure and imports nothing of the engine (the standard library and attrs
only), so every layer of the package may use it.

A reference token is ``$``, an optional second ``$``, an ASCII letter or ``_``, then any
run of ASCII word characters, ``.``, ``:`` and ``$`` (:data:`REF_TOKEN_RE`), where a lexeme
starts. So:

- text inside a quoted string literal is not a reference (``$name == '$x'`` reads ``name``
  only; ``\\`` escapes the next character);
- a ``$`` inside an identifier is not one (``a$b`` is one identifier; ``$$$x`` and ``$1``
  are identifiers too);
- after a number it is one (``1$a`` reads ``a``, as the compiled expression does).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs

__all__ = [
    "IDENT_RE",
    "NUMBER_RE",
    "PUNCTUATORS",
    "REF_TOKEN_RE",
    "RefKey",
    "each_concept",
    "is_cross_object",
    "iter_concepts",
    "lex",
    "memo_surface",
    "ref_key_of",
    "ref_tokens",
    "refs_of",
    "schema_refs",
    "template_keys",
]

#: The reference token pattern of SPEC §1.5 (where it applies: see :func:`lex`).
REF_TOKEN_RE: Final = re.compile(r"\$\$?[A-Za-z_][\w.:$]*", re.ASCII)
#: An identifier of the expression language (``$`` may continue one: ``a$b``).
IDENT_RE: Final = re.compile(r"[A-Za-z_$][\w$]*", re.ASCII)
#: A number literal: hexadecimal, or decimal with an optional fraction and exponent.
NUMBER_RE: Final = re.compile(
    r"0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII
)
#: Operators and punctuation, longest first.
PUNCTUATORS: Final = (
    ">>>", "===", "!==", "**", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>",
    "+", "-", "*", "/", "%", "<", ">", "!", "~", "&", "|", "^",
    "?", ":", ",", ".", "(", ")", "[", "]", "{", "}",
)

_BUILTIN_TEMPLATE_KEYS: Final = frozenset(
    {"_parent", "_id", "_name", "_incoming", "_outgoing", "originNode", "targetNode"}
)
_MAX_DEPTH: Final = 64
_EXPRESSION_REFS: dict[str, tuple[str, ...]] = {}


def _as_list(field: Any) -> list[Any]:
    if field is None:
        return []
    if isinstance(field, list | tuple):
        return list(field)
    return [field]


def lex(source: str) -> list[tuple[str, int, int]]:
    """Split an expression into ``(kind, start, end)`` lexemes; never raises.

    Kinds: ``ref`` (a reference token, both ``$`` included), ``num``, ``str`` (a quoted
    literal, quotes included; ``\\`` escapes the next character), ``id``, ``op`` (one of
    :data:`PUNCTUATORS`), and the two faults ``open-str`` (a string literal with no closing
    quote, to the end), ``bad-num`` (a digit outside ASCII) and ``bad`` (one character no
    lexeme starts with). Whitespace
    separates lexemes. The expression compiler builds its tokens from these lexemes, so a
    ``$`` is a reference exactly where the compiled expression resolves one.
    """
    out: list[tuple[str, int, int]] = []
    i = 0
    n = len(source)
    while i < n:
        ch = source[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "$":
            m = REF_TOKEN_RE.match(source, i)
            if m is not None:
                out.append(("ref", i, m.end()))
                i = m.end()
                continue
        if ch.isdigit() or (ch == "." and i + 1 < n and source[i + 1].isdigit()):
            m = NUMBER_RE.match(source, i)
            if m is None:  # a digit outside ASCII
                out.append(("bad-num", i, i + 1))
                i += 1
                continue
            out.append(("num", i, m.end()))
            i = m.end()
            continue
        if ch == '"' or ch == "'":
            j = i + 1
            while j < n and source[j] != ch:
                j += 2 if source[j] == "\\" else 1
            if j >= n:
                out.append(("open-str", i, n))
                break
            out.append(("str", i, j + 1))
            i = j + 1
            continue
        m = IDENT_RE.match(source, i)
        if m is not None:
            out.append(("id", i, m.end()))
            i = m.end()
            continue
        for punct in PUNCTUATORS:
            if source.startswith(punct, i):
                out.append(("op", i, i + len(punct)))
                i += len(punct)
                break
        else:
            out.append(("bad", i, i + 1))
            i += 1
    return out


def ref_tokens(source: str) -> list[tuple[int, int, str]]:
    """``(start, end, token)`` of every reference token the expression ``source`` reads, in
    order; ``token`` is the text as written (``$$clock:tick``)."""
    return [(start, end, source[start:end]) for kind, start, end in lex(source)
            if kind == "ref"]


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
        out.extend(_expression_refs(item))
    return out


def _expression_refs(source: str) -> tuple[str, ...]:
    """The reference paths of one expression, remembered per source text (the provider
    cache asks for a concept's surface on every call)."""
    found = _EXPRESSION_REFS.get(source)
    if found is None:
        found = tuple(tok[1:] for _, _, tok in ref_tokens(source))
        if len(_EXPRESSION_REFS) < 10_000:
            _EXPRESSION_REFS[source] = found
    return found


def schema_refs(schema: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """``(path, is_require)`` of a concept's require items, then of the references of its
    ``ensure`` and then its ``assert`` expressions, in order, duplicates kept."""
    out: list[tuple[str, bool]] = [(r, True) for r in refs_of(schema.get("require"), False)]
    for field in ("ensure", "assert"):
        out.extend((r, False) for r in refs_of(schema.get(field), True))
    return out


def memo_surface(schema: Mapping[str, Any]) -> list[str]:
    """The distinct reference paths of :func:`schema_refs`, in order: what a concept's
    conditions read, hops kept (``owner:level``)."""
    return list(dict.fromkeys(path for path, _ in schema_refs(schema)))


@attrs.frozen
class RefKey:
    """The fact key a reference path reads, and whether a ``.member`` follows it."""

    key: str
    has_member: bool


def is_cross_object(path: str) -> bool:
    """True when a reference path reads another object than the scope object: it has a hop
    (``owner:level``) or starts from a global (``$clock:tick`` as ``refs_of`` gives it)."""
    return ":" in path or path.startswith("$")


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
